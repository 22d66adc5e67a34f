// OJS spec fidelity: details of the core, worker-protocol, retry,
// rate-limiting and multi-tenancy documents that an independent conformance
// runner checks. Real redis-server, real broker, real HTTP.
#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "ojs/client/http_client.hpp"
#include "support/eventually.hpp"
#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

json gpu_worker(int gpus) {
  return {{"capabilities", {{"accelerator", "gpu"}, {"gpu", {{"type", "nvidia-a100"}, {"count", gpus}, {"memory_gb", 80}}}}}};
}

}  // namespace

class SpecFidelity : public ::testing::Test {
 protected:
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};

  ojs::HttpResponse raw(const std::string& method, const std::string& path, const std::string& body = {},
                        const std::vector<std::string>& headers = {}) {
    ojs::HttpClient client({broker.url()});
    std::vector<std::string> all{"Content-Type: application/openjobspec+json"};
    all.insert(all.end(), headers.begin(), headers.end());
    return client.request(method, path, body, all);
  }
};

// 1. The OpenAPI's NACK property: the backoff the broker chose, beside next_attempt_at.
TEST_F(SpecFidelity, NackReplyCarriesRetryDelayMs) {
  const auto id = api.push(job_in("sf-nack", {{"max_attempts", 3}, {"initial_interval", "PT2S"}, {"jitter", false}}));
  ASSERT_EQ(api.fetch({"sf-nack"}, "w").size(), 1u);
  auto nack = api.post("/ojs/v1/workers/nack", {{"job_id", id}, {"error", {{"message", "boom"}}}});
  ASSERT_EQ(nack.status, 200) << nack.body.dump();
  EXPECT_EQ(nack.body["state"], "retryable");
  ASSERT_TRUE(nack.body.contains("retry_delay_ms")) << nack.body.dump();
  EXPECT_EQ(nack.body["retry_delay_ms"], 2000);  // initial_interval, no jitter
  EXPECT_TRUE(nack.body.contains("next_attempt_at"));
  // A discarding NACK has no delay to report.
  const auto last = api.push(job_in("sf-nack", {{"max_attempts", 1}}));
  ASSERT_EQ(api.fetch({"sf-nack"}, "w").size(), 1u);
  auto final_nack = api.post("/ojs/v1/workers/nack", {{"job_id", last}, {"error", {{"message", "boom"}}}});
  EXPECT_EQ(final_nack.body["state"], "discarded");
  EXPECT_FALSE(final_nack.body.contains("retry_delay_ms"));

  // The FETCHed retry carries the delay it waited; a failure that ends it clears it.
  const auto twice = api.push(job_in("sf-nack-again", {{"max_attempts", 2}, {"initial_interval", "PT1S"}, {"jitter", false}}));
  ASSERT_EQ(api.fetch({"sf-nack-again"}, "w").size(), 1u);
  ASSERT_EQ(api.post("/ojs/v1/workers/nack", {{"job_id", twice}, {"error", {{"message", "boom"}}}}).body["state"], "retryable");
  json retried;
  ASSERT_TRUE(wait_until([&] {
    const auto got = api.fetch({"sf-nack-again"}, "w");
    if (!got.empty()) retried = got[0];
    return !got.empty();
  }));
  EXPECT_EQ(retried["attempt"], 2);
  ASSERT_TRUE(retried.contains("retry_delay_ms")) << retried.dump();
  EXPECT_GT(retried["retry_delay_ms"].get<long long>(), 0);
  EXPECT_LE(retried["retry_delay_ms"].get<long long>(), 1000);
  auto ended = api.post("/ojs/v1/workers/nack", {{"job_id", twice}, {"error", {{"message", "boom"}}}});
  EXPECT_EQ(ended.body["state"], "discarded");
  EXPECT_FALSE(ended.body.contains("retry_delay_ms")) << ended.body.dump();
  EXPECT_FALSE(api.get("/ojs/v1/jobs/" + twice).body["job"].contains("retry_delay_ms"));
}

// 2. A lost reservation returns the job to `available` at once (no backoff), the
// attempt stays counted, and max_attempts still ends it; a handler failure keeps backoff.
TEST_F(SpecFidelity, ExpiredVisibilityTimeoutReturnsJobToAvailableAtOnce) {
  // A 1-hour backoff: were the reaper to apply it, the job could not come back in this test.
  const auto id = api.push(job_in("sf-vis", {{"max_attempts", 2}, {"initial_interval", "PT1H"}, {"jitter", false}}));
  ASSERT_EQ(api.fetch({"sf-vis"}, "doomed", 1, {{"visibility_timeout_ms", 200}}).size(), 1u);
  json info;
  ASSERT_TRUE(eventually(10000, [&] {
    info = api.get("/ojs/v1/jobs/" + id).body["job"];
    return info["state"] != "active";
  }));
  EXPECT_EQ(info["state"], "available") << info.dump();
  EXPECT_EQ(info["attempt"], 1);
  EXPECT_FALSE(info.contains("next_attempt_at"));
  ASSERT_EQ(info["errors"].size(), 1u);
  EXPECT_EQ(info["errors"][0]["code"], "visibility_timeout");
  auto again = api.fetch({"sf-vis"}, "survivor", 1, {{"visibility_timeout_ms", 200}});
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0]["attempt"], 2);
  // The second expiry exhausts max_attempts: discarded, not available.
  ASSERT_TRUE(eventually(10000, [&] {
    info = api.get("/ojs/v1/jobs/" + id).body["job"];
    return info["state"] != "active";
  }));
  EXPECT_EQ(info["state"], "discarded") << info.dump();
  EXPECT_EQ(info["errors"].size(), 2u);
  // A handler failure of the same policy waits for its backoff.
  const auto failing = api.push(job_in("sf-vis", {{"max_attempts", 2}, {"initial_interval", "PT1H"}, {"jitter", false}}));
  ASSERT_EQ(api.fetch({"sf-vis"}, "w").size(), 1u);
  EXPECT_EQ(api.post("/ojs/v1/workers/nack", {{"job_id", failing}, {"error", {{"message", "x"}}}}).body["state"], "retryable");
}

// 3. Producer timestamps come back exactly as sent; computed ones are ours.
TEST_F(SpecFidelity, ProducerTimestampsComeBackAsSent) {
  json j = job_in("sf-time");
  j["options"]["scheduled_at"] = "2030-01-01T00:00:59Z";
  j["options"]["expires_at"] = "2031-06-01T12:00:00+02:00";
  auto pushed = api.post("/ojs/v1/jobs", j);
  ASSERT_EQ(pushed.status, 201) << pushed.body.dump();
  EXPECT_EQ(pushed.body["job"]["scheduled_at"], "2030-01-01T00:00:59Z");
  EXPECT_EQ(pushed.body["job"]["expires_at"], "2031-06-01T12:00:00+02:00");
  EXPECT_EQ(pushed.body["job"]["state"], "scheduled");
  auto info = api.get("/ojs/v1/jobs/" + pushed.body["job"]["id"].get<std::string>()).body["job"];
  EXPECT_EQ(info["scheduled_at"], "2030-01-01T00:00:59Z");
  EXPECT_EQ(info["expires_at"], "2031-06-01T12:00:00+02:00");
  // A relative schedule is computed by the broker: rendered in its own form.
  json rel = job_in("sf-time");
  rel["options"]["scheduled_at"] = "+PT1H";
  auto computed = api.post("/ojs/v1/jobs", rel).body["job"];
  const auto text = computed["scheduled_at"].get<std::string>();
  EXPECT_EQ(text.size(), std::string("2030-01-01T00:00:00.000Z").size()) << text;
  EXPECT_EQ(text.back(), 'Z');
}

// 4. A queue named in a pause/resume exists for it, even before its first job.
TEST_F(SpecFidelity, PauseAndResumeOfAQueueThatNeverHeldAJob) {
  auto paused = api.post("/ojs/v1/queues/sf-fresh/pause", json::object());
  ASSERT_EQ(paused.status, 200) << paused.body.dump();
  EXPECT_EQ(paused.body["paused"], true);
  EXPECT_EQ(paused.body["status"], "paused");
  auto stats = api.get("/ojs/v1/queues/sf-fresh/stats");
  ASSERT_EQ(stats.status, 200);
  EXPECT_EQ(stats.body["status"], "paused");
  // Paused before the first job: the job waits.
  api.push(job_in("sf-fresh"));
  EXPECT_EQ(api.fetch({"sf-fresh"}, "w").size(), 0u);
  auto resumed = api.post("/ojs/v1/queues/sf-fresh/resume", json::object());
  ASSERT_EQ(resumed.status, 200);
  EXPECT_EQ(resumed.body["paused"], false);
  EXPECT_EQ(api.fetch({"sf-fresh"}, "w").size(), 1u);
  EXPECT_EQ(api.post("/ojs/v1/queues/sf-new2/resume", json::object()).status, 200);
  EXPECT_EQ(api.post("/ojs/v1/queues/Bad_Name/pause", json::object()).status, 400);
}

// 5. A known path with another method: 405 and Allow, not 400.
TEST_F(SpecFidelity, WrongMethodOnAKnownPathIs405WithAllow) {
  auto r = raw("GET", "/ojs/v1/workers/fetch");
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.headers["allow"], "POST");
  auto body = json::parse(r.body, nullptr, false);
  EXPECT_EQ(body["error"]["code"], "method_not_allowed") << r.body;
  const auto id = api.push(job_in("sf-405"));
  auto put = raw("PUT", "/ojs/v1/jobs/" + id, "{}");
  EXPECT_EQ(put.status, 405);
  EXPECT_EQ(put.headers["allow"], "GET, DELETE, PATCH");
  EXPECT_EQ(raw("GET", "/ojs/v1/no-such-thing").status, 404);
}

// 6. Queue rate limits (ojs-rate-limiting.md §7.2) hold jobs available at FETCH.
TEST_F(SpecFidelity, QueueConcurrencyLimitIsEnforcedOnFetch) {
  const std::string q = "sf-conc";
  auto put = api.call("PUT", "/ojs/v1/admin/queues/" + q + "/rate-limit", {{"concurrency", 2}});
  ASSERT_EQ(put.status, 200) << put.body.dump();
  EXPECT_EQ(put.body["rate_limit"]["concurrency"], 2);
  EXPECT_EQ(api.get("/ojs/v1/admin/queues/" + q + "/config").body["config"]["rate_limit"]["concurrency"], 2);
  for (int i = 0; i < 5; ++i) api.push(job_in(q));
  auto first = api.fetch({q}, "w1", 5);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(api.fetch({q}, "w2", 5).size(), 0u);
  EXPECT_EQ(api.get("/ojs/v1/queues/" + q + "/stats").body["stats"]["available"], 3);
  // Why the others wait: the queue's rate limit, by name.
  const auto why = api.get("/ojs/v1/queues/" + q + "/diagnosis").body;
  ASSERT_EQ(why["classes"].size(), 1u) << why.dump();
  EXPECT_TRUE(why["classes"][0]["by_predicate"].contains("rate_limit")) << why.dump();
  EXPECT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", first[0]["id"]}}).status, 200);
  EXPECT_EQ(api.fetch({q}, "w2", 5).size(), 1u);
  // GPU workers claim one by one: the limit holds across their rounds too.
  EXPECT_EQ(api.fetch({q}, "g", 5, gpu_worker(8)).size(), 0u);
}

TEST_F(SpecFidelity, QueueRateWindowIsEnforcedOnFetch) {
  const std::string q = "sf-rate";
  auto put = api.call("PUT", "/ojs/v1/admin/queues/" + q + "/config",
                      {{"rate_limit", {{"rate", {{"limit", 3}, {"period", "PT2S"}}}}}});
  ASSERT_EQ(put.status, 200) << put.body.dump();
  EXPECT_EQ(put.body["config"]["rate_limit"], json({{"rate", {{"limit", 3}, {"period", "PT2S"}}}}));
  for (int i = 0; i < 5; ++i) api.push(job_in(q));
  auto started = api.fetch({q}, "w", 5);
  ASSERT_EQ(started.size(), 3u);
  for (const auto& j : started) api.post("/ojs/v1/workers/ack", {{"job_id", j["id"]}});
  // Finished jobs do not free the window: starts are counted, not active jobs.
  EXPECT_EQ(api.fetch({q}, "w", 5).size(), 0u);
  std::size_t later = 0;
  EXPECT_TRUE(eventually(15000, [&] { return (later += api.fetch({q}, "w", 5).size()) >= 2; }));
  EXPECT_EQ(later, 2u);
}

TEST_F(SpecFidelity, RateLimitConfigIsValidated) {
  auto bad = api.call("PUT", "/ojs/v1/admin/queues/sf-bad/rate-limit", {{"rate", {{"limit", 0}, {"period", "PT1S"}}}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.body["error"]["details"]["field"], "rate.limit");
  auto period = api.call("PUT", "/ojs/v1/admin/queues/sf-bad/config", {{"rate_limit", {{"rate", {{"limit", 5}, {"period", "1m"}}}}}});
  EXPECT_EQ(period.status, 400);
  EXPECT_EQ(period.body["error"]["details"]["field"], "rate_limit.rate.period");
  auto unknown = api.call("PUT", "/ojs/v1/admin/queues/sf-bad/rate-limit", {{"throttle", {{"limit", 5}}}});
  EXPECT_EQ(unknown.status, 400);
  EXPECT_EQ(unknown.body["error"]["details"]["field"], "throttle");
}

// 7. Health reports ojs-observability.md §10.1's values (healthy/unhealthy; the level-0
// case accepts them; the OpenAPI's ok/error differ, docs/spec-status.md), the backend
// status the OpenAPI lists (HealthResponse).
TEST_F(SpecFidelity, HealthReportsListedStatusValues) {
  auto up = api.get("/ojs/v1/health");
  ASSERT_EQ(up.status, 200);
  EXPECT_EQ(up.body["status"], "healthy");
  const std::set<std::string> backend_values{"connected", "disconnected", "error"};
  EXPECT_TRUE(backend_values.count(up.body["backend"]["status"].get<std::string>())) << up.body.dump();
  EXPECT_EQ(up.body["backend"]["status"], "connected");
  redis.stop();
  auto down = api.get("/ojs/v1/health");
  EXPECT_EQ(down.status, 503);
  EXPECT_EQ(down.body["status"], "unhealthy") << down.body.dump();
  EXPECT_EQ(down.body["backend"]["status"], "disconnected");
}

// 8. X-OJS-Tenant (ojs-multi-tenancy.md §5.3) lands in meta.tenant_id, where quotas read it.
TEST_F(SpecFidelity, TenantHeaderFillsMetaTenantIdAndQuotasSeeIt) {
  const std::string q = "sf-tenant";
  ASSERT_EQ(api.call("PUT", "/ojs/v1/admin/queues/" + q + "/config", {{"tenant_quotas", {{"tenants", {{"acme", {{"max_gpus", 1}}}}}}}}).status, 200);
  json j = job_in(q);
  j["ext_ml_gpu_count"] = 1;
  std::vector<std::string> ids;
  for (int i = 0; i < 2; ++i) {
    auto r = raw("POST", "/ojs/v1/jobs", j.dump(), {"X-OJS-Tenant: acme"});
    ASSERT_EQ(r.status, 201) << r.body;
    auto job = json::parse(r.body)["job"];
    EXPECT_EQ(job["meta"]["tenant_id"], "acme");
    ids.push_back(job["id"]);
  }
  // acme may hold one GPU: the second job waits although the worker has eight.
  EXPECT_EQ(api.fetch({q}, "g1", 2, gpu_worker(8)).size(), 1u);
  EXPECT_EQ(api.fetch({q}, "g2", 2, gpu_worker(8)).size(), 0u);
  EXPECT_EQ(api.get("/ojs/v1/admin/queues/" + q + "/budget").body["budget"]["tenants"]["acme"]["gpus_in_use"], 1);
  // Same tenant in body and header: fine. A different one: 400 naming the field.
  json same = job_in(q);
  same["meta"] = {{"tenant_id", "acme"}};
  EXPECT_EQ(raw("POST", "/ojs/v1/jobs", same.dump(), {"X-OJS-Tenant: acme"}).status, 201);
  json other = job_in(q);
  other["meta"] = {{"tenant_id", "globex"}};
  auto conflict = raw("POST", "/ojs/v1/jobs", other.dump(), {"X-OJS-Tenant: acme"});
  EXPECT_EQ(conflict.status, 400);
  EXPECT_EQ(json::parse(conflict.body)["error"]["details"]["field"], "meta.tenant_id");
  EXPECT_EQ(raw("POST", "/ojs/v1/jobs", job_in(q).dump(), {"X-OJS-Tenant: bad tenant!"}).status, 400);
}

// 9. Workers gone past the retention window are forgotten, their jobs reclaimed first.
TEST(WorkerRetention, WorkersGonePastRetentionAreForgottenAfterTheirJobsAreReclaimed) {
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--worker-dead-after-ms", "400", "--worker-retention-ms", "800"}};
  Api api{broker.url()};
  const auto id = api.push(job_in("sf-prune"));
  // A long reservation: only the dead-worker path can free the job.
  ASSERT_EQ(api.fetch({"sf-prune"}, "gone", 1, {{"visibility_timeout_ms", 600000}, {"capabilities", gpu_worker(2)["capabilities"]}}).size(), 1u);
  for (int i = 0; i < 10; ++i) api.post("/ojs/v1/workers/heartbeat", {{"worker_id", "idle-" + std::to_string(i)}});
  auto listed = [&](const std::string& worker) {
    const json workers = api.get("/ojs/v1/admin/workers").body["workers"];
    for (const auto& w : workers)
      if (w["id"] == worker) return true;
    return false;
  };
  EXPECT_TRUE(listed("gone"));
  // "stay" keeps in contact throughout; "gone" and the idle ones do not.
  bool forgotten = eventually(15000, [&] {
    api.post("/ojs/v1/workers/heartbeat", {{"worker_id", "stay"}});
    return !listed("gone") && !listed("idle-0");
  });
  ASSERT_TRUE(forgotten);
  EXPECT_TRUE(listed("stay"));
  auto info = api.get("/ojs/v1/jobs/" + id).body["job"];
  EXPECT_EQ(info["state"], "available") << info.dump();  // reclaimed, not lost with its worker
  ASSERT_EQ(info["errors"].size(), 1u);
  EXPECT_EQ(info["errors"][0]["code"], "worker_lost");
  EXPECT_EQ(info["errors"][0]["type"], "worker_death");
  // A forgotten worker that comes back is simply new again.
  EXPECT_EQ(api.fetch({"sf-prune"}, "gone").size(), 1u);
  EXPECT_TRUE(listed("gone"));
}

// 10. The admin API extension (ojs-admin-api.md): ADM-001..008 and dead-letter bulk actions.
TEST_F(SpecFidelity, AdminApiListsQueuesJobsAndStats) {
  const std::string q = "sf-admin";
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(api.push(job_in(q)));
  ASSERT_EQ(api.fetch({q}, "w").size(), 1u);
  auto queues = api.get("/ojs/v1/admin/queues");
  ASSERT_EQ(queues.status, 200) << queues.body.dump();
  ASSERT_EQ(queues.body["items"].size(), 1u);
  EXPECT_EQ(queues.body["items"][0]["name"], q);
  EXPECT_EQ(queues.body["items"][0]["state"], "active");
  EXPECT_EQ(queues.body["items"][0]["counts"]["available"], 4);
  EXPECT_EQ(queues.body["items"][0]["counts"]["active"], 1);
  EXPECT_EQ(queues.body["pagination"]["total"], 1);
  auto detail = api.get("/ojs/v1/admin/queues/" + q);
  ASSERT_EQ(detail.status, 200);
  EXPECT_TRUE(detail.body["configuration"].contains("rate_limit"));
  EXPECT_EQ(api.get("/ojs/v1/admin/queues/sf-none").status, 404);
  EXPECT_EQ(api.post("/ojs/v1/admin/queues/" + q + "/pause", json::object()).body["paused"], true);
  EXPECT_EQ(api.get("/ojs/v1/admin/queues/" + q).body["state"], "paused");
  // Jobs: paginated, in FETCH order.
  auto page2 = api.get("/ojs/v1/admin/jobs?queue=" + q + "&state=available&per_page=3&page=2");
  ASSERT_EQ(page2.status, 200) << page2.body.dump();
  EXPECT_EQ(page2.body["pagination"]["total"], 4);
  ASSERT_EQ(page2.body["items"].size(), 1u);
  EXPECT_EQ(page2.body["items"][0]["id"], ids[4]);
  EXPECT_EQ(page2.body["items"][0]["queue"], q);
  EXPECT_EQ(api.get("/ojs/v1/admin/jobs?state=done").status, 400);
  EXPECT_EQ(api.get("/ojs/v1/admin/jobs?per_page=500").status, 400);
  auto one = api.get("/ojs/v1/admin/jobs/" + ids[1]);
  ASSERT_EQ(one.status, 200);
  EXPECT_EQ(one.body["id"], ids[1]);
  EXPECT_EQ(api.post("/ojs/v1/admin/jobs/" + ids[1] + "/cancel", json::object()).body["job"]["state"], "cancelled");
  EXPECT_EQ(api.post("/ojs/v1/admin/jobs/" + ids[2] + "/retry", json::object()).status, 409);  // waiting: nothing to retry
  auto stats = api.get("/ojs/v1/admin/stats");
  ASSERT_EQ(stats.status, 200);
  EXPECT_EQ(stats.body["queues"], 1);
  EXPECT_EQ(stats.body["workers"], 1);
  EXPECT_EQ(stats.body["jobs"]["available"], 3);
  EXPECT_EQ(stats.body["jobs"]["cancelled"], 1);
  // The manifest lists exactly the extensions implemented.
  std::set<std::string> names;
  const json official = api.get("/ojs/manifest").body["extensions"]["official"];
  for (const auto& e : official) names.insert(e["name"].get<std::string>());
  EXPECT_EQ(names, (std::set<std::string>{"ml-resources", "admin-api", "backpressure", "durable-execution"}));
}

TEST_F(SpecFidelity, AdminBulkActionsOnTheDeadLetterAndCancel) {
  const std::string q = "sf-bulk";
  const json once = {{"max_attempts", 1}, {"on_exhaustion", "dead_letter"}};
  for (const std::string type : {"report.a", "report.b", "mail"}) {
    json j = job_in(q, once);
    j["type"] = type;
    const auto id = api.push(j);
    ASSERT_EQ(api.fetch({q}, "w").size(), 1u);
    api.post("/ojs/v1/workers/nack", {{"job_id", id}, {"error", {{"message", "fatal"}}}});
  }
  EXPECT_EQ(api.get("/ojs/v1/admin/dead-letter?queue=" + q).body["jobs"].size(), 3u);
  auto unconfirmed = api.post("/ojs/v1/admin/jobs/bulk/retry", {{"filter", {{"queue", q}}}});
  EXPECT_EQ(unconfirmed.status, 400);
  EXPECT_EQ(unconfirmed.body["error"]["details"]["field"], "confirm");
  auto retried = api.post("/ojs/v1/admin/jobs/bulk/retry",
                          {{"filter", {{"queue", q}, {"state", "discarded"}, {"type", "report.*"}}}, {"confirm", true}});
  ASSERT_EQ(retried.status, 200) << retried.body.dump();
  EXPECT_EQ(retried.body["matched"], 2);
  EXPECT_EQ(retried.body["succeeded"], 2);
  EXPECT_EQ(retried.body["failed"], 0);
  EXPECT_EQ(api.get("/ojs/v1/queues/" + q + "/stats").body["stats"]["available"], 2);
  auto dead = api.get("/ojs/v1/admin/dead-letter?queue=" + q).body["jobs"];
  ASSERT_EQ(dead.size(), 1u);
  const auto mail = dead[0]["id"].get<std::string>();
  auto deleted = api.post("/ojs/v1/admin/jobs/bulk/delete", {{"filter", {{"queue", q}}}, {"confirm", true}});
  EXPECT_EQ(deleted.body["succeeded"], 1);
  EXPECT_EQ(api.get("/ojs/v1/jobs/" + mail).status, 404);
  auto cancelled = api.post("/ojs/v1/admin/jobs/bulk/cancel", {{"filter", {{"queue", q}, {"state", "available"}}}, {"confirm", true}});
  EXPECT_EQ(cancelled.body["succeeded"], 2);
  EXPECT_EQ(api.get("/ojs/v1/queues/" + q + "/stats").body["stats"]["available"], 0);
  EXPECT_EQ(api.post("/ojs/v1/admin/jobs/bulk/explode", {{"filter", {{"queue", q}}}, {"confirm", true}}).status, 404);
}

TEST(AdminWorkers, DeregisteringAStaleWorkerReclaimsItsJobsFirst) {
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--worker-dead-after-ms", "500"}};
  Api api{broker.url()};
  const auto id = api.push(job_in("sf-dereg"));
  ASSERT_EQ(api.fetch({"sf-dereg"}, "old", 1, {{"visibility_timeout_ms", 600000}}).size(), 1u);
  EXPECT_EQ(api.call("DELETE", "/ojs/v1/admin/workers/old").status, 409);  // still in contact
  EXPECT_EQ(api.call("DELETE", "/ojs/v1/admin/workers/nobody").status, 404);
  ojs::test::Api::Reply deleted{0, nullptr};
  EXPECT_TRUE(eventually(10000, [&] { return (deleted = api.call("DELETE", "/ojs/v1/admin/workers/old")).status == 200; }));
  EXPECT_EQ(deleted.body["deleted"], true);
  const json workers = api.get("/ojs/v1/admin/workers").body["workers"];
  for (const auto& w : workers) EXPECT_NE(w["id"], "old");
  EXPECT_EQ(api.get("/ojs/v1/jobs/" + id).body["job"]["state"], "available");
}

// The job's document reaches FETCH, ACK, INFO and PUSH's reply as the producer sent it
// (the envelope is assembled from the stored text, not re-encoded: docs/architecture.md
// "Requests and Redis I/O"), with strings that need escaping, non-ASCII keys and values,
// numbers at the edges of what JSON carries exactly, and nesting; and the replies that
// carry the job twice (FETCH's `jobs` and `job`, ACK's fields and `job`) carry it equal.
TEST_F(SpecFidelity, AJobsDocumentComesBackAsSentFromPushFetchAckAndInfo) {
  const json args = json::array({"quote \" backslash \\ slash / newline \n tab \t", "caf\u00e9 \u4e2d\u6587 \U0001F680",
                                 9007199254740993LL, -0.0, 1e-300, 18446744073709551615ULL, json::object(), json::array(),
                                 {{"k,}", "v]\"{"}, {"\u00fcber", {{"deep", json::array({json::array({json::array({1})})})}}}}});
  const json meta = {{"labels", {{"z", "1"}, {"a\"b", "c"}}}, {"\u00e9t\u00e9", true}, {"n", nullptr}};
  auto pushed = api.post("/ojs/v1/jobs", {{"type", "fidelity.doc"}, {"args", args}, {"meta", meta}, {"options", {{"queue", "sf-doc"}}}});
  ASSERT_EQ(pushed.status, 201) << pushed.body.dump();
  EXPECT_EQ(pushed.body["job"]["args"], args);
  EXPECT_EQ(pushed.body["job"]["meta"], meta);
  const std::string id = pushed.body["job"]["id"];

  auto fetched = api.post("/ojs/v1/workers/fetch", {{"queues", {"sf-doc"}}, {"worker_id", "w-doc"}, {"count", 1}});
  ASSERT_EQ(fetched.status, 200) << fetched.body.dump();
  ASSERT_EQ(fetched.body["jobs"].size(), 1u) << fetched.body.dump();
  EXPECT_EQ(fetched.body["job"], fetched.body["jobs"][0]);
  EXPECT_EQ(fetched.body["job"]["args"], args);
  EXPECT_EQ(fetched.body["job"]["meta"], meta);
  EXPECT_EQ(fetched.body["job"]["state"], "active");
  EXPECT_EQ(fetched.body["job"]["attempt"], 1);

  auto acked = api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "w-doc"}, {"result", {{"r", args}}}});
  ASSERT_EQ(acked.status, 200) << acked.body.dump();
  EXPECT_EQ(acked.body["job_id"], id);
  json top = acked.body;
  for (const char* added : {"job", "job_id", "acknowledged"}) top.erase(added);
  EXPECT_EQ(top, acked.body["job"]) << "the ACK's top-level fields are its job's";
  EXPECT_EQ(acked.body["job"]["args"], args);
  EXPECT_EQ(acked.body["job"]["result"], (json{{"r", args}}));
  EXPECT_EQ(acked.body["job"]["state"], "completed");

  auto info = api.call("GET", "/ojs/v1/jobs/" + id);
  ASSERT_EQ(info.status, 200);
  EXPECT_EQ(info.body["job"]["args"], args);
  EXPECT_EQ(info.body["job"]["meta"], meta);
  EXPECT_EQ(info.body["job"]["result"], (json{{"r", args}}));
}
