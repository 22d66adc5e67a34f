// OJS core operations against a real broker process and a real redis-server.
#include <gtest/gtest.h>

#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

class BrokerCore : public ::testing::Test {
 protected:
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
};

TEST_F(BrokerCore, PushFetchAckRoundTripKeepsUnknownAttributes) {
  const auto id = api.push({{"type", "ml.train"}, {"args", {1, "two"}}, {"ext_ml_gpu_count", 2}, {"x_custom", {{"a", 1}}},
                            {"options", {{"queue", "core-rt"}}}});
  // A plain OJS worker (no capabilities) never gets a job with hard GPU constraints.
  EXPECT_EQ(api.fetch({"core-rt"}, "plain").size(), 0u);
  auto jobs = api.fetch({"core-rt"}, "w1", 1, {{"capabilities", {{"gpu", {{"type", "nvidia-a100"}, {"count", 2}, {"memory_gb", 80}}}}}});
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0]["id"], id);
  EXPECT_EQ(jobs[0]["state"], "active");
  EXPECT_EQ(jobs[0]["attempt"], 1);
  auto ack = api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"result", {{"loss", 0.25}}}});
  EXPECT_EQ(ack.status, 200);
  EXPECT_EQ(ack.body["state"], "completed");
  auto info = api.get("/ojs/v1/jobs/" + id);
  EXPECT_EQ(info.body["job"]["ext_ml_gpu_count"], 2);
  EXPECT_EQ(info.body["job"]["x_custom"]["a"], 1);
  EXPECT_EQ(info.body["job"]["result"]["loss"], 0.25);
}

TEST_F(BrokerCore, BadInputNamesTheFieldAndTheRule) {
  auto r = api.post("/ojs/v1/jobs", {{"type", "Bad Type"}, {"args", json::array()}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body["error"]["details"]["field"], "type");
  EXPECT_FALSE(r.body["error"]["details"]["rule"].get<std::string>().empty());
  r = api.post("/ojs/v1/jobs", {{"type", "a.b"}, {"args", json::array()}, {"options", {{"priority", 101}}}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body["error"]["details"]["field"], "priority");
  r = api.post("/ojs/v1/workers/fetch", {{"queues", "default"}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body["error"]["details"]["field"], "queues");
}

TEST_F(BrokerCore, PriorityThenFifoOrdering) {
  const auto low = api.push({{"type", "t"}, {"args", json::array()}, {"options", {{"queue", "core-prio"}, {"priority", -5}}}});
  const auto first = api.push({{"type", "t"}, {"args", json::array()}, {"options", {{"queue", "core-prio"}}}});
  const auto second = api.push({{"type", "t"}, {"args", json::array()}, {"options", {{"queue", "core-prio"}}}});
  const auto high = api.push({{"type", "t"}, {"args", json::array()}, {"options", {{"queue", "core-prio"}, {"priority", 50}}}});
  std::vector<std::string> order;
  for (int i = 0; i < 4; ++i) order.push_back(api.fetch({"core-prio"}, "w")[0]["id"]);
  EXPECT_EQ(order, (std::vector<std::string>{high, first, second, low}));
}

TEST_F(BrokerCore, PausedQueueHandsOutNothingUntilResumed) {
  api.push({{"type", "t"}, {"args", json::array()}, {"options", {{"queue", "core-pause"}}}});
  EXPECT_EQ(api.post("/ojs/v1/queues/core-pause/pause", json::object()).status, 200);
  EXPECT_EQ(api.fetch({"core-pause"}, "w").size(), 0u);
  EXPECT_EQ(api.post("/ojs/v1/queues/core-pause/resume", json::object()).status, 200);
  EXPECT_EQ(api.fetch({"core-pause"}, "w").size(), 1u);
}
