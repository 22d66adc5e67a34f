// What a worker's report and fetch are told: an ACK whose `fetch` is malformed is
// refused whole (400 naming fetch.<field>, the job unchanged), and a draining worker
// without capabilities that fetches while it holds a job is told quiet, not
// terminate (no held set shows its job; its heartbeat, listing its jobs, ends the drain).
#include <gtest/gtest.h>

#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

class WorkerReportChecks : public ::testing::Test {
 protected:
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  std::string push(const std::string& queue) { return api.push({{"type", "t"}, {"args", json::array()}, {"options", {{"queue", queue}}}}); }
  std::string state_of(const std::string& id) { return api.get("/ojs/v1/jobs/" + id).body["job"]["state"]; }
};

TEST_F(WorkerReportChecks, AnAckWithABadFetchIsRefusedWhole) {
  const auto id = push("wrc");
  ASSERT_EQ(api.fetch({"wrc"}, "w1").size(), 1u);
  const json bad_fetch = {{"queues", {"wrc"}}, {"capabilities", {{"gpu", {{"count", -1}}}}}};
  auto r = api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "w1"}, {"fetch", bad_fetch}});
  EXPECT_EQ(r.status, 400) << r.body.dump();
  EXPECT_EQ(r.body["error"]["details"]["field"], "fetch.capabilities.gpu.count") << r.body.dump();
  EXPECT_EQ(state_of(id), "active");
  r = api.post("/ojs/v1/workers/nack", {{"job_id", id}, {"worker_id", "w1"}, {"fetch", bad_fetch},
                                        {"error", {{"message", "x"}}}});
  EXPECT_EQ(r.status, 400) << r.body.dump();
  EXPECT_EQ(state_of(id), "active");
  EXPECT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "w1"}}).status, 200);
}

TEST_F(WorkerReportChecks, ADrainingWorkerWithoutCapabilitiesIsToldQuietWhileItHoldsAJob) {
  const auto id = push("wrc-drain");
  ASSERT_EQ(api.fetch({"wrc-drain"}, "w-plain").size(), 1u);
  ASSERT_EQ(api.post("/ojs/v1/admin/workers/w-plain/drain", json::object()).status, 200);
  auto fetched = api.post("/ojs/v1/workers/fetch", {{"queues", {"wrc-drain"}}, {"worker_id", "w-plain"}});
  ASSERT_EQ(fetched.status, 200) << fetched.body.dump();
  EXPECT_EQ(fetched.body["state"], "quiet") << fetched.body.dump();
  auto beat = api.post("/ojs/v1/workers/heartbeat", {{"worker_id", "w-plain"}, {"active_jobs", {id}}});
  EXPECT_EQ(beat.body["state"], "quiet") << beat.body.dump();
  ASSERT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "w-plain"}}).status, 200);
  beat = api.post("/ojs/v1/workers/heartbeat", {{"worker_id", "w-plain"}, {"active_jobs", json::array()}});
  EXPECT_EQ(beat.body["state"], "terminate") << beat.body.dump();
}
