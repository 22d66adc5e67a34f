// OJS level-1 reliability: retries with backoff, visibility timeouts, heartbeats,
// dead letter, execution timeouts, and no loss or duplication under chaos.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

// Polls FETCH until a job arrives or the deadline passes.
json fetch_within(Api& api, const std::string& queue, const std::string& worker, int ms, json extra = json::object()) {
  for (int waited = 0; waited < ms; waited += 25) {
    auto jobs = api.fetch({queue}, worker, 1, extra);
    if (!jobs.empty()) return jobs[0];
    sleep_ms(25);
  }
  return nullptr;
}
}  // namespace

class Reliability : public ::testing::Test {
 protected:
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--worker-dead-after-ms", "1500"}};
  Api api{broker.url()};
};

TEST_F(Reliability, FailsTwiceThenSucceedsOnAttemptThreeWithTwoErrors) {
  const auto id = api.push(job_in("rel-retry", {{"max_attempts", 5}, {"initial_interval", "PT0.1S"}, {"jitter", false}}));
  for (int attempt = 1; attempt <= 2; ++attempt) {
    auto job = fetch_within(api, "rel-retry", "w", 3000);
    ASSERT_FALSE(job.is_null());
    EXPECT_EQ(job["attempt"], attempt);
    auto nack = api.post("/ojs/v1/workers/nack", {{"job_id", id}, {"error", {{"code", "flaky"}, {"message", "try " + std::to_string(attempt)}}}});
    EXPECT_EQ(nack.body["state"], "retryable");
    EXPECT_TRUE(nack.body.contains("next_attempt_at"));
  }
  auto job = fetch_within(api, "rel-retry", "w", 3000);
  ASSERT_FALSE(job.is_null());
  EXPECT_EQ(job["attempt"], 3);
  EXPECT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", id}}).status, 200);
  auto info = api.get("/ojs/v1/jobs/" + id).body["job"];
  EXPECT_EQ(info["state"], "completed");
  EXPECT_EQ(info["attempt"], 3);
  ASSERT_EQ(info["errors"].size(), 2u);
  EXPECT_EQ(info["errors"][0]["message"], "try 1");
  EXPECT_EQ(info["errors"][1]["message"], "try 2");
  EXPECT_FALSE(info.contains("error"));
}

TEST_F(Reliability, BackoffGrowsExponentially) {
  const auto id = api.push(job_in("rel-backoff", {{"max_attempts", 4}, {"initial_interval", "PT1S"}, {"backoff_coefficient", 3.0}, {"jitter", false}}));
  api.fetch({"rel-backoff"}, "w");
  auto first = api.post("/ojs/v1/workers/nack", {{"job_id", id}, {"error", {{"message", "x"}}}}).body;
  // attempt 1 failed: next in ~1 s; nothing is fetchable before that.
  EXPECT_EQ(api.fetch({"rel-backoff"}, "w").size(), 0u);
  auto job = fetch_within(api, "rel-backoff", "w", 3000);
  ASSERT_FALSE(job.is_null());
  auto second = api.post("/ojs/v1/workers/nack", {{"job_id", id}, {"error", {{"message", "y"}}}}).body;
  // attempt 2 failed: the delay is 3 s (1 s * 3^1): still not fetchable after 1.5 s.
  sleep_ms(1500);
  EXPECT_EQ(api.fetch({"rel-backoff"}, "w").size(), 0u);
  EXPECT_NE(first["next_attempt_at"], second["next_attempt_at"]);
}

TEST_F(Reliability, WorkerKilledMidJobIsRedeliveredAfterVisibilityTimeout) {
  const auto id = api.push(job_in("rel-vis", {{"initial_interval", "PT0.05S"}, {"jitter", false}}));
  auto job = api.fetch({"rel-vis"}, "doomed", 1, {{"visibility_timeout_ms", 300}});
  ASSERT_EQ(job.size(), 1u);
  EXPECT_EQ(api.fetch({"rel-vis"}, "survivor").size(), 0u);  // still reserved
  auto again = fetch_within(api, "rel-vis", "survivor", 3000);
  ASSERT_FALSE(again.is_null());
  EXPECT_EQ(again["id"], id);
  EXPECT_EQ(again["attempt"], 2);
  EXPECT_EQ(again["errors"][0]["code"], "visibility_timeout");
  // The doomed worker's late ACK cannot complete the job the survivor now holds.
  auto late = api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "doomed"}});
  EXPECT_EQ(late.status, 409);
  EXPECT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "survivor"}}).status, 200);
}

TEST_F(Reliability, LateAckOfAReclaimedJobIsRefusedWith409) {
  const auto id = api.push(job_in("rel-late", {{"initial_interval", "PT30S"}, {"jitter", false}}));
  ASSERT_EQ(api.fetch({"rel-late"}, "slow", 1, {{"visibility_timeout_ms", 200}}).size(), 1u);
  sleep_ms(600);  // reaper reclaims it: available again at once (a lost reservation has no backoff)
  auto late = api.post("/ojs/v1/workers/ack", {{"job_id", id}});
  EXPECT_EQ(late.status, 409);
  EXPECT_EQ(late.body["error"]["code"], "conflict");
  EXPECT_EQ(late.body["error"]["details"]["state"], "available");
}

// A worker whose ACK was answered 503 (the reply lost, e.g. Redis failing over after the
// ACK ran) retries it, as the protocol says: the same ACK of the job it completed is
// answered 200 again and changes nothing; anyone else's, or another result, is a conflict.
TEST_F(Reliability, RetriedAckOfTheJobItsWorkerCompletedAnswers200AndChangesNothing) {
  const auto id = api.push(job_in("rel-replay"));
  ASSERT_EQ(api.fetch({"rel-replay"}, "w1").size(), 1u);
  const json ack = {{"job_id", id}, {"worker_id", "w1"}, {"result", {{"loss", 0.25}}}};
  const auto first = api.post("/ojs/v1/workers/ack", ack);
  ASSERT_EQ(first.status, 200) << first.body.dump();
  const auto again = api.post("/ojs/v1/workers/ack", ack);
  ASSERT_EQ(again.status, 200) << again.body.dump();
  EXPECT_EQ(again.body["state"], "completed");
  EXPECT_EQ(again.body["completed_at"], first.body["completed_at"]);
  EXPECT_EQ(again.body["result"], json({{"loss", 0.25}}));

  EXPECT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "w1"}, {"result", {{"loss", 0.5}}}}).status, 409);
  EXPECT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "w1"}}).status, 409);
  EXPECT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "w2"}, {"result", {{"loss", 0.25}}}}).status, 409);
  const auto anonymous = api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"result", {{"loss", 0.25}}}});
  EXPECT_EQ(anonymous.status, 409);  // OJS: completed is terminal; only the completing worker's replay is recognised
  EXPECT_EQ(anonymous.body["error"]["details"]["state"], "completed");

  EXPECT_EQ(api.get("/ojs/v1/jobs/" + id).body["job"]["result"], json({{"loss", 0.25}}));
  EXPECT_EQ(api.get("/ojs/v1/queues/rel-replay/stats").body["stats"]["completed"], 1);
  EXPECT_EQ(api.get("/ojs/v1/events?queues=rel-replay&types=job.completed").body["events"].size(), 1u);
}

// The same for a NACK: its retry after a lost reply finds the failure it recorded and
// answers 200 without recording it again; another error or worker is a conflict.
TEST_F(Reliability, RetriedNackOfTheFailureItsWorkerRecordedAnswers200AndChangesNothing) {
  const auto id = api.push(job_in("rel-renack", {{"max_attempts", 3}, {"initial_interval", "PT30S"}, {"jitter", false}}));
  ASSERT_EQ(api.fetch({"rel-renack"}, "w1").size(), 1u);
  const json nack = {{"job_id", id}, {"worker_id", "w1"}, {"error", {{"code", "oom"}, {"message", "CUDA out of memory"}}}};
  const auto first = api.post("/ojs/v1/workers/nack", nack);
  ASSERT_EQ(first.status, 200) << first.body.dump();
  ASSERT_EQ(first.body["state"], "retryable");
  const auto again = api.post("/ojs/v1/workers/nack", nack);
  ASSERT_EQ(again.status, 200) << again.body.dump();
  EXPECT_EQ(again.body["state"], "retryable");
  EXPECT_EQ(again.body["next_attempt_at"], first.body["next_attempt_at"]);

  EXPECT_EQ(api.post("/ojs/v1/workers/nack", {{"job_id", id}, {"worker_id", "w1"}, {"error", {{"code", "oom"}, {"message", "other"}}}}).status, 409);
  EXPECT_EQ(api.post("/ojs/v1/workers/nack", {{"job_id", id}, {"worker_id", "w2"}, {"error", nack["error"]}}).status, 409);
  EXPECT_EQ(api.post("/ojs/v1/workers/nack", {{"job_id", id}, {"error", nack["error"]}}).status, 409);
  const auto job = api.get("/ojs/v1/jobs/" + id).body["job"];
  EXPECT_EQ(job["errors"].size(), 1u) << job.dump();
  EXPECT_EQ(job["attempt"], 1);
  EXPECT_EQ(api.get("/ojs/v1/events?queues=rel-renack&types=job.retrying").body["events"].size(), 1u);
}

TEST_F(Reliability, HeartbeatKeepsAJobReservedPastItsVisibilityTimeout) {
  const auto id = api.push(job_in("rel-beat"));
  // Beats every 250 ms for 2 s keep a 1 s reservation: a beat may come 750 ms late
  // on a loaded machine (400 ms beaten every 200 ms left 200 ms, and lost the job).
  ASSERT_EQ(api.fetch({"rel-beat"}, "beater", 1, {{"visibility_timeout_ms", 1000}}).size(), 1u);
  for (int i = 0; i < 8; ++i) {
    sleep_ms(250);
    auto beat = api.post("/ojs/v1/workers/heartbeat", {{"worker_id", "beater"}, {"active_jobs", {id}}, {"visibility_timeout_ms", 1000}});
    ASSERT_EQ(beat.status, 200);
    EXPECT_EQ(beat.body["jobs_extended"], json::array({id}));
    EXPECT_EQ(beat.body["state"], "running");
  }
  EXPECT_EQ(api.get("/ojs/v1/jobs/" + id).body["job"]["state"], "active");
  EXPECT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", id}}).status, 200);
}

TEST_F(Reliability, QuietAndTerminateDirectives) {
  api.push(job_in("rel-quiet"));
  api.post("/ojs/v1/workers/heartbeat", {{"worker_id", "w9"}});  // directives are for known workers
  EXPECT_EQ(api.post("/ojs/v1/admin/workers/w9/quiet", json::object()).status, 200);
  auto beat = api.post("/ojs/v1/workers/heartbeat", {{"worker_id", "w9"}});
  EXPECT_EQ(beat.body["directive"], "quiet");
  EXPECT_EQ(api.fetch({"rel-quiet"}, "w9").size(), 0u);  // quiet workers get no new work
  api.post("/ojs/v1/admin/workers/w9/terminate", json::object());
  EXPECT_EQ(api.post("/ojs/v1/workers/heartbeat", {{"worker_id", "w9"}}).body["directive"], "terminate");
  api.post("/ojs/v1/admin/workers/w9/resume", json::object());
  EXPECT_EQ(api.fetch({"rel-quiet"}, "w9").size(), 1u);
}

TEST_F(Reliability, ExhaustedJobLandsInDeadLetterAndCanBeRetried) {
  const auto id = api.push(job_in("rel-dead", {{"max_attempts", 1}, {"on_exhaustion", "dead_letter"}}));
  api.fetch({"rel-dead"}, "w");
  auto nack = api.post("/ojs/v1/workers/nack", {{"job_id", id}, {"error", {{"message", "fatal"}}}});
  EXPECT_EQ(nack.body["state"], "discarded");
  auto list = api.get("/ojs/v1/dead-letter?queue=rel-dead").body;
  ASSERT_EQ(list["jobs"].size(), 1u);
  EXPECT_EQ(list["jobs"][0]["id"], id);
  auto retried = api.post("/ojs/v1/dead-letter/" + id + "/retry", json::object());
  EXPECT_EQ(retried.status, 200);
  EXPECT_EQ(retried.body["job"]["state"], "available");
  EXPECT_EQ(api.get("/ojs/v1/dead-letter?queue=rel-dead").body["jobs"].size(), 0u);
  auto job = api.fetch({"rel-dead"}, "w");
  ASSERT_EQ(job.size(), 1u);
  EXPECT_EQ(job[0]["attempt"], 1);
  EXPECT_EQ(job[0]["errors"].size(), 1u);  // history kept
  // Discard from the dead letter deletes the job.
  api.post("/ojs/v1/workers/nack", {{"job_id", id}, {"error", {{"message", "fatal again"}}}});
  EXPECT_EQ(api.call("DELETE", "/ojs/v1/dead-letter/" + id).status, 200);
  EXPECT_EQ(api.get("/ojs/v1/jobs/" + id).status, 404);
}

TEST_F(Reliability, NonRetryableErrorsSkipRetries) {
  const auto id = api.push(job_in("rel-nonretry", {{"max_attempts", 5}, {"non_retryable_errors", {"bad_input"}}}));
  api.fetch({"rel-nonretry"}, "w");
  auto nack = api.post("/ojs/v1/workers/nack", {{"job_id", id}, {"error", {{"code", "bad_input"}, {"message", "no"}}}});
  EXPECT_EQ(nack.body["state"], "discarded");
}

TEST_F(Reliability, MlTimeoutSecondsOverridesTimeoutMsAsExecutionDeadline) {
  json j = job_in("rel-timeout", {{"max_attempts", 1}});
  j["options"]["timeout_ms"] = 600000;
  j["ext_ml_timeout_seconds"] = 1;
  const auto id = api.push(j);
  ASSERT_EQ(api.fetch({"rel-timeout"}, "w").size(), 1u);
  for (int i = 0; i < 10; ++i) {  // heartbeats cannot extend past the execution deadline
    sleep_ms(200);
    api.post("/ojs/v1/workers/heartbeat", {{"worker_id", "w"}, {"active_jobs", {id}}});
  }
  auto info = api.get("/ojs/v1/jobs/" + id).body["job"];
  EXPECT_EQ(info["state"], "discarded");
  EXPECT_EQ(info["error"]["code"], "timeout");
}

TEST_F(Reliability, JobsOfAWorkerThatStopsHeartbeatingAreReclaimed) {
  const auto id = api.push(job_in("rel-lost", {{"initial_interval", "PT0.05S"}, {"jitter", false}}));
  // A long visibility timeout: only the dead-worker detector can free it.
  ASSERT_EQ(api.fetch({"rel-lost"}, "ghost", 1, {{"visibility_timeout_ms", 600000}}).size(), 1u);
  auto job = fetch_within(api, "rel-lost", "alive", 5000);
  ASSERT_FALSE(job.is_null());
  EXPECT_EQ(job["id"], id);
  EXPECT_EQ(job["errors"][0]["code"], "worker_lost");
}

TEST_F(Reliability, TenThousandJobsWithFailingAndDyingWorkersNoLossNoDuplicates) {
  constexpr int kJobs = 10000;
  {
    std::vector<std::thread> producers;
    for (int p = 0; p < 4; ++p)
      producers.emplace_back([&, p] {
        Api producer{broker.url()};
        for (int i = p; i < kJobs; i += 4)
          producer.push(job_in("chaos", {{"max_attempts", 1000}, {"initial_interval", "PT0.01S"}, {"jitter", false}}));
      });
    for (auto& t : producers) t.join();
  }
  std::mutex mutex;
  std::map<std::string, int> completions;
  std::atomic<int> failures{0}, abandoned{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 6; ++w) {
    workers.emplace_back([&, w] {
      Api api{broker.url()};
      std::mt19937 rng(w);
      std::uniform_int_distribution<int> dice(0, 99);
      int idle = 0;
      while (idle < 40) {
        auto jobs = api.fetch({"chaos"}, "chaos-" + std::to_string(w), 10, {{"visibility_timeout_ms", 250}});
        if (jobs.empty()) {
          ++idle;
          sleep_ms(25);
          continue;
        }
        idle = 0;
        for (const auto& j : jobs) {
          const int roll = dice(rng);
          const std::string id = j["id"];
          if (roll < 80) {
            auto ack = api.post("/ojs/v1/workers/ack", {{"job_id", id}});
            if (ack.status == 200) {
              std::lock_guard lock(mutex);
              ++completions[id];
            }
          } else if (roll < 95) {
            api.post("/ojs/v1/workers/nack", {{"job_id", id}, {"error", {{"message", "random failure"}}}});
            ++failures;
          } else {
            ++abandoned;  // the worker "dies" holding this job
          }
        }
      }
    });
  }
  for (auto& t : workers) t.join();
  EXPECT_EQ(completions.size(), static_cast<size_t>(kJobs)) << "jobs lost";
  for (const auto& [id, n] : completions) ASSERT_EQ(n, 1) << "job " << id << " completed " << n << " times";
  auto stats = api.get("/ojs/v1/queues/chaos/stats").body["stats"];
  EXPECT_EQ(stats["completed"], kJobs);
  EXPECT_EQ(stats["available"], 0);
  EXPECT_EQ(stats["active"], 0);
  EXPECT_GT(failures.load(), 0);
  EXPECT_GT(abandoned.load(), 0);
}
