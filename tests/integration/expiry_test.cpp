// Expiry is swept by the maintenance pass (an expired job leaves
// `available` with no FETCH reaching it), a past expires_at is refused at PUSH,
// a scheduled job that expired before its start is discarded instead of promoted,
// and an OJS `timeout` above the queue's limit is a 422 instead of a silent cap.
#include <gtest/gtest.h>

#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;
using namespace std::chrono_literals;

namespace {

json job_with(const std::string& queue, const json& options) {
  json j = {{"type", "exp.x"}, {"args", json::array()}, {"options", options}};
  j["options"]["queue"] = queue;
  return j;
}

double metric(const std::string& text, const std::string& sample) {
  const auto at = text.find(sample + " ");
  return at == std::string::npos ? -1 : std::stod(text.substr(at + sample.size() + 1));
}

}  // namespace

TEST(Expiry, ExpiredJobLeavesAvailableWithoutAnyFetch) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  const auto expiring = api.push(job_with("exp-sweep", {{"expires_at", "+PT1S"}}));
  const auto lasting = api.push(job_with("exp-sweep", {{"expires_at", "2099-01-01T00:00:00Z"}}));
  // No worker polls the queue: only the maintenance pass can discard it.
  const auto info = wait_for_state(api, expiring, "discarded");
  ASSERT_EQ(info["state"], "discarded") << info.dump();
  EXPECT_EQ(info["error"]["code"], "expired");
  EXPECT_FALSE(info.contains("completed_at"));
  EXPECT_EQ(api.get("/ojs/v1/jobs/" + lasting).body["job"]["state"], "available");
  const auto stats = api.get("/ojs/v1/queues/exp-sweep/stats").body;
  EXPECT_EQ(stats["stats"]["available"], 1) << stats.dump();
  ojs::HttpClientOptions options;
  options.base_url = broker.url();
  ojs::HttpClient raw(options);
  const auto metrics = raw.get("/metrics").body;
  EXPECT_EQ(metric(metrics, "ojs_queue_jobs{queue=\"exp-sweep\",state=\"available\"}"), 1) << metrics;
  const auto events = api.get("/ojs/v1/events?types=job.discarded&job_id=" + expiring).body["events"];
  EXPECT_EQ(events.size(), 1u);
}

TEST(Expiry, PastExpiresAtIsRefusedAtPush) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  const auto r = api.post("/ojs/v1/jobs", job_with("exp-past", {{"expires_at", "2020-01-01T00:00:00Z"}}));
  EXPECT_EQ(r.status, 400) << r.body.dump();
  EXPECT_EQ(r.body["error"]["details"]["field"], "expires_at");
  const auto batch = api.post("/ojs/v1/jobs/batch", {{"jobs", {job_with("exp-past", {{"expires_at", "2099-01-01T00:00:00Z"}}),
                                                              job_with("exp-past", {{"expires_at", "2020-01-01T00:00:00Z"}})}}});
  EXPECT_EQ(batch.status, 400) << batch.body.dump();
  EXPECT_EQ(batch.body["error"]["details"]["field"], "jobs[1].expires_at");
}

TEST(Expiry, ScheduledJobExpiredBeforeItsStartIsDiscardedNotPromoted) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  // iso_in is whole seconds, 0-1 s past the time asked: expires_at lands 1-2 s from
  // now (after the PUSH, even on a loaded machine: iso_in(0ms) could be 50 ms away and
  // the PUSH refused as expired, seen in CI), scheduled_at 3-4 s (after the expiry).
  const auto id = api.push(job_with("exp-sched", {{"scheduled_at", iso_in(3000ms)}, {"expires_at", iso_in(1000ms)}}));
  EXPECT_EQ(api.get("/ojs/v1/jobs/" + id).body["job"]["state"], "scheduled");
  const auto info = wait_for_state(api, id, "discarded");
  ASSERT_EQ(info["state"], "discarded") << info.dump();
  EXPECT_EQ(info["error"]["code"], "expired");
  // Never offered to a worker: no job.available event.
  EXPECT_TRUE(api.get("/ojs/v1/events?types=job.available&job_id=" + id).body["events"].empty());
}

TEST(Expiry, OjsTimeoutAboveTheQueueLimitIsRefusedNotCapped) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  ASSERT_EQ(api.call("PUT", "/ojs/v1/admin/queues/exp-to/config", {{"ml_limits", {{"max_timeout_seconds", 60}}}}).status, 200);
  json over = job_with("exp-to", json::object());
  over["timeout"] = 7200;
  const auto r = api.post("/ojs/v1/jobs", over);
  EXPECT_EQ(r.status, 422) << r.body.dump();
  EXPECT_EQ(r.body["error"]["details"]["limit"], "max_timeout_seconds");
  EXPECT_EQ(r.body["error"]["details"]["field"], "timeout");
  EXPECT_EQ(r.body["error"]["details"]["max"], 60);
  json within = job_with("exp-to", json::object());
  within["timeout"] = 30;
  const auto id = api.push(within);
  EXPECT_EQ(api.get("/ojs/v1/jobs/" + id).body["job"]["timeout_ms"], 30000);
}
