// Progress reports (spec/ojs-progress.md): POST /ojs/v1/workers/progress and
// PUT/GET /ojs/v1/jobs/{id}/progress; visible in INFO and events; a heartbeat too.
#include <gtest/gtest.h>

#include <thread>

#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

class Progress : public ::testing::Test {
 protected:
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--visibility-timeout-ms", "800"}};
  Api api{broker.url()};
  std::string push_and_fetch(const std::string& queue) {
    const auto id = api.push({{"type", "p.x"}, {"args", json::array()}, {"options", {{"queue", queue}}}});
    EXPECT_EQ(api.fetch({queue}, "pw").size(), 1u);
    return id;
  }
};

TEST_F(Progress, ReportsAreVisibleInInfoEventsAndTheProgressEndpoint) {
  const auto id = push_and_fetch("prog-a");
  auto r = api.post("/ojs/v1/workers/progress", {{"job_id", id}, {"worker_id", "pw"}, {"progress", 0.25}, {"message", "epoch 1/4"}});
  ASSERT_EQ(r.status, 200) << r.body.dump();
  EXPECT_EQ(r.body["accepted"], true);
  EXPECT_DOUBLE_EQ(r.body["progress"].get<double>(), 0.25);
  EXPECT_EQ(r.body["data"]["message"], "epoch 1/4");
  auto info = api.get("/ojs/v1/jobs/" + id).body["job"];
  EXPECT_DOUBLE_EQ(info["progress"].get<double>(), 0.25);
  EXPECT_TRUE(info.contains("progress_updated_at"));
  EXPECT_EQ(api.get("/ojs/v1/events?types=job.progress&job_id=" + id).body["events"].size(), 1u);
  // Progress never goes back; values above 1 are clamped.
  EXPECT_EQ(api.post("/ojs/v1/workers/progress", {{"job_id", id}, {"progress", 0.1}}).body["accepted"], false);
  auto put = api.call("PUT", "/ojs/v1/jobs/" + id + "/progress", {{"progress", 7}});
  EXPECT_DOUBLE_EQ(put.body["progress"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(api.get("/ojs/v1/jobs/" + id + "/progress").body["progress"].get<double>(), 1.0);
}

TEST_F(Progress, ReportsKeepTheReservationAndCompletionSetsOne) {
  const auto id = push_and_fetch("prog-b");
  for (int i = 1; i <= 10; ++i) {  // 2.5 s, three visibility timeouts
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    ASSERT_EQ(api.post("/ojs/v1/workers/progress", {{"job_id", id}, {"worker_id", "pw"}, {"progress", i / 20.0}}).body["accepted"], true);
  }
  EXPECT_TRUE(api.fetch({"prog-b"}, "other").empty());
  ASSERT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", id}}).status, 200);
  auto info = api.get("/ojs/v1/jobs/" + id).body["job"];
  EXPECT_EQ(info["attempt"], 1);
  EXPECT_DOUBLE_EQ(info["progress"].get<double>(), 1.0);
}

TEST_F(Progress, NonActiveJobsAreIgnoredAndBadBodiesRefused) {
  const auto waiting = api.push({{"type", "p.y"}, {"args", json::array()}, {"options", {{"queue", "prog-c"}}}});
  auto r = api.post("/ojs/v1/workers/progress", {{"job_id", waiting}, {"progress", 0.5}});
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body["accepted"], false);
  EXPECT_TRUE(r.body["progress"].is_null());
  EXPECT_EQ(api.post("/ojs/v1/workers/progress", {{"job_id", "019414d4-8b2e-7c3a-b5d1-f0e2a3b4c5d6"}, {"progress", 0.5}}).status, 404);
  EXPECT_EQ(api.post("/ojs/v1/workers/progress", {{"job_id", waiting}, {"progress", "half"}}).body["error"]["details"]["field"], "progress");
  EXPECT_EQ(api.post("/ojs/v1/workers/progress", {{"job_id", waiting}}).status, 400);
  EXPECT_EQ(api.post("/ojs/v1/workers/progress", {{"progress", 0.5}}).body["error"]["details"]["field"], "job_id");
}

// Progress never goes back within an attempt; a new attempt starts afresh, whatever
// put the job back (here its reservation ran out): the stale value of the earlier
// attempt neither refuses the new attempt's reports nor reads as its progress.
TEST_F(Progress, ANewAttemptReportsFromZeroAgain) {
  const auto id = push_and_fetch("prog-d");
  ASSERT_EQ(api.post("/ojs/v1/workers/progress", {{"job_id", id}, {"worker_id", "pw"}, {"progress", 0.6}}).body["accepted"], true);
  std::vector<json> again;
  for (int i = 0; i < 100 && again.empty(); ++i) {  // the reaper puts it back after 800 ms
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    again = api.fetch({"prog-d"}, "pw2");
  }
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0]["attempt"], 2) << again[0].dump();
  const auto r = api.post("/ojs/v1/workers/progress", {{"job_id", id}, {"worker_id", "pw2"}, {"progress", 0.3}});
  EXPECT_EQ(r.body["accepted"], true) << r.body.dump();
  EXPECT_DOUBLE_EQ(api.get("/ojs/v1/jobs/" + id + "/progress").body["progress"].get<double>(), 0.3);
}

// The same for a job retried from the dead letter queue: its last attempt ended
// failed at 0.6, the retried one reports 0.2.
TEST_F(Progress, AJobRetriedFromTheDeadLetterQueueReportsFromZeroAgain) {
  const auto id = api.push({{"type", "p.z"}, {"args", json::array()}, {"options", {{"queue", "prog-e"}, {"retry", {{"max_attempts", 1}, {"on_exhaustion", "dead_letter"}}}}}});
  ASSERT_EQ(api.fetch({"prog-e"}, "pw").size(), 1u);
  ASSERT_EQ(api.post("/ojs/v1/workers/progress", {{"job_id", id}, {"worker_id", "pw"}, {"progress", 0.6}}).body["accepted"], true);
  ASSERT_EQ(api.post("/ojs/v1/workers/nack", {{"job_id", id}, {"worker_id", "pw"}, {"error", {{"code", "boom"}, {"message", "failed"}}}}).status, 200);
  const auto retried = api.post("/ojs/v1/dead-letter/" + id + "/retry", json::object());
  ASSERT_EQ(retried.status, 200) << retried.body.dump();
  EXPECT_TRUE(api.get("/ojs/v1/jobs/" + id + "/progress").body["progress"].is_null());  // not the last attempt's 0.6
  ASSERT_EQ(api.fetch({"prog-e"}, "pw2").size(), 1u);
  const auto r = api.post("/ojs/v1/workers/progress", {{"job_id", id}, {"worker_id", "pw2"}, {"progress", 0.2}});
  EXPECT_EQ(r.body["accepted"], true) << r.body.dump();
  EXPECT_DOUBLE_EQ(api.get("/ojs/v1/jobs/" + id + "/progress").body["progress"].get<double>(), 0.2);
}
