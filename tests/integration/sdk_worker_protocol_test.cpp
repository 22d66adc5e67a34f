// The official SDK workers speak the worker protocol (spec/ojs-worker-protocol.md):
// heartbeats carry `"active_jobs": <count>, "active_job_ids": [...]` and the lifecycle
// directive comes back as `state`. These tests speak exactly that shape.
#include <gtest/gtest.h>

#include <thread>

#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

json sdk_beat(const std::string& worker, const std::vector<std::string>& ids) {
  return {{"worker_id", worker},
          {"state", "running"},
          {"active_jobs", ids.size()},
          {"active_job_ids", ids},
          {"hostname", "sdk-host"},
          {"pid", 4242},
          {"queues", {"sdk"}},
          {"concurrency", 2}};
}
}  // namespace

class SdkWorkerProtocol : public ::testing::Test {
 protected:
  RedisServer redis;
  // A short default visibility: a heartbeat that is not understood loses the job fast.
  BrokerProcess broker{redis.url(), {"--visibility-timeout-ms", "800"}};
  Api api{broker.url()};
};

TEST_F(SdkWorkerProtocol, JobLongerThanItsVisibilityTimeoutCompletesOnAttemptOne) {
  const auto id = api.push({{"type", "sdk.long"}, {"args", json::array()}, {"options", {{"queue", "sdk"}}}});
  auto jobs = api.fetch({"sdk"}, "sdk-worker");
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0]["attempt"], 1);
  // The job "runs" for 3 s, almost four visibility timeouts, heartbeating every 250 ms.
  for (int i = 0; i < 12; ++i) {
    sleep_ms(250);
    auto beat = api.post("/ojs/v1/workers/heartbeat", sdk_beat("sdk-worker", {id}));
    ASSERT_EQ(beat.status, 200) << beat.body.dump();
    EXPECT_EQ(beat.body["state"], "running");
    EXPECT_EQ(beat.body["jobs_extended"], json::array({id}));
  }
  EXPECT_EQ(api.fetch({"sdk"}, "other-worker").size(), 0u);  // never redelivered
  auto ack = api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"result", {{"ok", true}}}});
  ASSERT_EQ(ack.status, 200) << ack.body.dump();
  auto info = api.get("/ojs/v1/jobs/" + id).body["job"];
  EXPECT_EQ(info["state"], "completed");
  EXPECT_EQ(info["attempt"], 1);
  EXPECT_EQ(info["result"], json({{"ok", true}}));
}

TEST_F(SdkWorkerProtocol, QuietAndTerminateReachTheWorkerAsStateInHeartbeatAndFetch) {
  api.post("/ojs/v1/workers/heartbeat", sdk_beat("sdk-q", {}));  // directives are for known workers
  EXPECT_EQ(api.post("/ojs/v1/admin/workers/sdk-q/quiet", json::object()).status, 200);
  auto beat = api.post("/ojs/v1/workers/heartbeat", sdk_beat("sdk-q", {}));
  ASSERT_EQ(beat.status, 200) << beat.body.dump();
  EXPECT_EQ(beat.body["state"], "quiet");
  auto fetch = api.post("/ojs/v1/workers/fetch", {{"queues", {"sdk"}}, {"worker_id", "sdk-q"}});
  ASSERT_EQ(fetch.status, 200);
  EXPECT_EQ(fetch.body["state"], "quiet");
  EXPECT_TRUE(fetch.body["jobs"].empty());
  api.post("/ojs/v1/admin/workers/sdk-q/terminate", json::object());
  EXPECT_EQ(api.post("/ojs/v1/workers/heartbeat", sdk_beat("sdk-q", {})).body["state"], "terminate");
}

TEST_F(SdkWorkerProtocol, BothShapesAreAcceptedAndMalformedOnesNameTheField) {
  const auto id = api.push({{"type", "sdk.x"}, {"args", json::array()}, {"options", {{"queue", "sdk"}}}});
  ASSERT_EQ(api.fetch({"sdk"}, "w").size(), 1u);
  auto binding = api.post("/ojs/v1/workers/heartbeat", {{"worker_id", "w"}, {"active_jobs", {id}}});
  EXPECT_EQ(binding.status, 200);
  EXPECT_EQ(binding.body["jobs_extended"], json::array({id}));

  auto no_ids = api.post("/ojs/v1/workers/heartbeat", {{"worker_id", "w"}, {"active_jobs", 1}});
  EXPECT_EQ(no_ids.status, 400);
  EXPECT_EQ(no_ids.body["error"]["details"]["field"], "active_job_ids");
  auto negative = api.post("/ojs/v1/workers/heartbeat", {{"worker_id", "w"}, {"active_jobs", -1}, {"active_job_ids", json::array()}});
  EXPECT_EQ(negative.status, 400);
  EXPECT_EQ(negative.body["error"]["details"]["field"], "active_jobs");
  auto bad_ids = api.post("/ojs/v1/workers/heartbeat", {{"worker_id", "w"}, {"active_jobs", 1}, {"active_job_ids", {7}}});
  EXPECT_EQ(bad_ids.status, 400);
  EXPECT_EQ(bad_ids.body["error"]["details"]["field"], "active_job_ids");
}

TEST_F(SdkWorkerProtocol, AdminWorkersCountsGpusOfWorkersThatListOnlyDevices) {
  const json caps = {{"devices", {{{"index", 0}, {"type", "nvidia-a100"}, {"memory_gb", 80}},
                                  {{"index", 1}, {"type", "nvidia-a100"}, {"memory_gb", 80}}}}};
  ASSERT_EQ(api.post("/ojs/v1/workers/fetch", {{"queues", {"sdk"}}, {"worker_id", "dev-only"}, {"capabilities", caps}}).status, 200);
  auto list = api.get("/ojs/v1/admin/workers").body["workers"];
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0]["gpus_total"], 2);
  EXPECT_EQ(list[0]["gpus_free"], 2);
}

TEST_F(SdkWorkerProtocol, NotFoundHintsNameWhatWasNotFound) {
  const auto job_hint = api.get("/ojs/v1/jobs/019414d4-8b2e-7c3a-b5d1-f0e2a3b4c5d6").body["error"]["hint"].get<std::string>();
  EXPECT_NE(job_hint.find("UUIDv7"), std::string::npos);
  const auto queue_hint = api.get("/ojs/v1/queues/nope/stats").body["error"]["hint"].get<std::string>();
  EXPECT_EQ(queue_hint.find("UUIDv7"), std::string::npos) << queue_hint;
  EXPECT_NE(queue_hint.find("queue"), std::string::npos) << queue_hint;
  const auto path_hint = api.get("/ojs/v1/nothing/here").body["error"]["hint"].get<std::string>();
  EXPECT_EQ(path_hint.find("UUIDv7"), std::string::npos) << path_hint;
}
