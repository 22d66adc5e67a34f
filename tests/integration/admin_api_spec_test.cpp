// The admin API and the response shapes that tools we did not write read:
// each test is one group of deviations from ojs-admin-api.md, ojs-http-binding.md
// §11, ojs-cron.md §8 and the dashboard's aliases, found with the official dashboard
// and Python SDK against de2fafa.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "ojs/core/time.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

json job_in(const std::string& queue, json options = json::object()) {
  options["queue"] = queue;
  return {{"type", "t"}, {"args", json::array()}, {"options", options}};
}

// Finishes the one job fetched from `queue` by NACK (the retry policy decides what follows).
void nack_one(Api& api, const std::string& queue, const std::string& worker = "w") {
  const auto jobs = api.fetch({queue}, worker);
  ASSERT_EQ(jobs.size(), 1u) << "nothing to fetch from " << queue;
  auto r = api.post("/ojs/v1/workers/nack", {{"job_id", jobs[0]["id"]}, {"error", {{"type", "Boom"}, {"message", "failed"}}}});
  ASSERT_EQ(r.status, 200) << r.body.dump();
}

void ack_one(Api& api, const std::string& queue) {
  const auto jobs = api.fetch({queue}, "w");
  ASSERT_EQ(jobs.size(), 1u) << "nothing to fetch from " << queue;
  ASSERT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", jobs[0]["id"]}, {"result", 1}}).status, 200);
}

const json kOnce = {{"max_attempts", 1}, {"on_exhaustion", "discard"}};
const json kDeadOnce = {{"max_attempts", 1}, {"on_exhaustion", "dead_letter"}};
const json kRetry = {{"max_attempts", 3}, {"initial_interval", "PT1H"}, {"jitter", false}};

std::string in_an_hour() { return ojs::format_rfc3339(ojs::now_ms() + 3600 * 1000); }

}  // namespace

class AdminApiSpec : public ::testing::Test {
 protected:
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
};

// The dashboard's job page reads errors.length and meta of any job, and its front
// page every count of admin/stats even before the first queue exists.
TEST_F(AdminApiSpec, JobDetailAlwaysHasErrorsAndMetaAndStatsEveryCount) {
  auto empty = api.get("/ojs/v1/admin/stats");
  ASSERT_EQ(empty.status, 200) << empty.body.dump();
  for (const char* state : {"available", "active", "completed", "discarded", "scheduled", "retryable", "dead_letter", "cancelled"})
    EXPECT_EQ(empty.body["jobs"][state], 0) << state << " " << empty.body.dump();
  const auto id = api.push(job_in("as-detail"));
  auto detail = api.get("/ojs/v1/admin/jobs/" + id);
  ASSERT_EQ(detail.status, 200) << detail.body.dump();
  EXPECT_EQ(detail.body["id"], id);
  EXPECT_EQ(detail.body["state"], "available");
  EXPECT_EQ(detail.body["errors"], json::array()) << detail.body.dump();
  EXPECT_EQ(detail.body["meta"], json::object());
}

// The OpenAPI's adminDeleteDeadLetter answers a bare 204; /ojs/v1/dead-letter/{id} {deleted, job_id}.
TEST_F(AdminApiSpec, AdminDeadLetterDeleteIsA204) {
  const auto first = api.push(job_in("as-dl-del", {{"retry", kDeadOnce}}));
  nack_one(api, "as-dl-del");
  const auto second = api.push(job_in("as-dl-del", {{"retry", kDeadOnce}}));
  nack_one(api, "as-dl-del");
  auto bare = api.call("DELETE", "/ojs/v1/admin/dead-letter/" + first);
  EXPECT_EQ(bare.status, 204);
  EXPECT_EQ(api.call("DELETE", "/ojs/v1/admin/dead-letter/" + first).status, 404);
  auto full = api.call("DELETE", "/ojs/v1/dead-letter/" + second);
  EXPECT_EQ(full.status, 200);
  EXPECT_EQ(full.body["deleted"], true);
  EXPECT_EQ(full.body["job_id"], second);
}

// §10.1, §6.1, §10.2: scheduled and retryable counted apart (the old keys kept), the
// throughput, and the per-minute history.
TEST_F(AdminApiSpec, StatsCountScheduledAndRetryableWithThroughputAndHistory) {
  const std::string q = "as-stats";
  api.push(job_in(q, {{"scheduled_at", in_an_hour()}}));
  api.push(job_in(q, {{"retry", kRetry}}));
  nack_one(api, q);  // retryable, due in an hour
  api.push(job_in(q));
  ack_one(api, q);

  auto stats = api.get("/ojs/v1/admin/stats");
  ASSERT_EQ(stats.status, 200) << stats.body.dump();
  EXPECT_EQ(stats.body["jobs"]["scheduled"], 1) << stats.body.dump();
  EXPECT_EQ(stats.body["jobs"]["retryable"], 1);
  EXPECT_EQ(stats.body["jobs"]["delayed"], 2) << "the old key stays for one release";
  EXPECT_EQ(stats.body["jobs"]["completed"], 1);
  ASSERT_TRUE(stats.body["throughput"].is_object()) << stats.body.dump();
  EXPECT_TRUE(stats.body["throughput"]["processed_per_minute"].is_number());
  EXPECT_TRUE(stats.body["throughput"]["failed_per_minute"].is_number());

  auto queues = api.get("/ojs/v1/admin/queues");
  ASSERT_EQ(queues.status, 200);
  EXPECT_EQ(queues.body["items"][0]["counts"]["scheduled"], 1) << queues.body.dump();
  EXPECT_EQ(queues.body["items"][0]["counts"]["retryable"], 1);
  EXPECT_TRUE(queues.body["items"][0]["throughput"].is_object());

  auto history = api.get("/ojs/v1/admin/stats/history?period=1m");
  ASSERT_EQ(history.status, 200) << history.body.dump();
  EXPECT_EQ(history.body["period"], "1m");
  long long processed = 0, failed = 0;
  for (const auto& point : history.body["data"]) {
    EXPECT_TRUE(point["timestamp"].is_string()) << point.dump();
    processed += point["processed"].get<long long>();
    failed += point["failed"].get<long long>();
  }
  EXPECT_EQ(processed, 1) << history.body.dump();
  EXPECT_EQ(failed, 1);
  EXPECT_EQ(api.get("/ojs/v1/admin/stats/history?period=1m&queue=" + q).body["data"].size(), history.body["data"].size());
  auto bad = api.get("/ojs/v1/admin/stats/history?period=7m");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.body["error"]["details"]["field"], "period") << bad.body.dump();
}

// §7.1: the real total, created_at, since/until, and the finished states listable.
TEST_F(AdminApiSpec, JobListHasRealTotalsCreatedAtTimeFiltersAndFinishedJobs) {
  const std::string q = "as-list";
  for (int i = 0; i < 30; ++i) api.push(job_in(q));
  auto page = api.get("/ojs/v1/admin/jobs?queue=" + q + "&state=available&per_page=25");
  ASSERT_EQ(page.status, 200) << page.body.dump();
  EXPECT_EQ(page.body["pagination"]["total"], 30) << "not min(total, page x per_page)";
  ASSERT_EQ(page.body["items"].size(), 25u);
  EXPECT_TRUE(page.body["items"][0]["created_at"].is_string()) << page.body["items"][0].dump();
  EXPECT_EQ(api.get("/ojs/v1/admin/jobs?state=available&per_page=10&page=3").body["items"].size(), 10u);

  EXPECT_EQ(api.get("/ojs/v1/admin/jobs?queue=" + q + "&since=" + in_an_hour()).body["pagination"]["total"], 0);
  EXPECT_EQ(api.get("/ojs/v1/admin/jobs?queue=" + q + "&until=" + in_an_hour()).body["pagination"]["total"], 30);
  EXPECT_EQ(api.get("/ojs/v1/admin/jobs?queue=" + q + "&until=2020-01-01T00:00:00Z").body["pagination"]["total"], 0);
  auto bad = api.get("/ojs/v1/admin/jobs?since=yesterday");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.body["error"]["details"]["field"], "since") << bad.body.dump();

  // One job of each finished state, in a queue of its own.
  const std::string f = "as-finished";
  api.push(job_in(f));
  ack_one(api, f);
  api.push(job_in(f, {{"retry", kOnce}}));
  nack_one(api, f);
  const auto cancelled = api.push(job_in(f));
  ASSERT_EQ(api.call("DELETE", "/ojs/v1/jobs/" + cancelled).status, 200);
  for (const std::string state : {"completed", "discarded", "cancelled"}) {
    auto listed = api.get("/ojs/v1/admin/jobs?queue=" + f + "&state=" + state);
    ASSERT_EQ(listed.status, 200) << state << " " << listed.body.dump();
    ASSERT_EQ(listed.body["items"].size(), 1u) << state << " " << listed.body.dump();
    EXPECT_EQ(listed.body["items"][0]["state"], state);
    EXPECT_EQ(listed.body["pagination"]["total"], 1);
  }
  EXPECT_EQ(api.get("/ojs/v1/admin/jobs?state=completed").body["items"].size(), 1u) << "across queues too";
  EXPECT_EQ(api.get("/ojs/v1/admin/jobs?state=finished").status, 400);
}

// The finished index is bounded per queue: the count in the queue configuration
// (retention.max_jobs) keeps the newest.
TEST_F(AdminApiSpec, FinishedJobsIndexKeepsTheNewestWithinTheRetentionCount) {
  const std::string q = "as-retain";
  auto put = api.call("PUT", "/ojs/v1/admin/queues/" + q + "/config", {{"retention", {{"max_jobs", 2}}}});
  ASSERT_EQ(put.status, 200) << put.body.dump();
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    ids.push_back(api.push(job_in(q)));
    ack_one(api, q);
  }
  auto listed = api.get("/ojs/v1/admin/jobs?queue=" + q + "&state=completed");
  ASSERT_EQ(listed.status, 200) << listed.body.dump();
  std::set<std::string> seen;
  for (const auto& j : listed.body["items"]) seen.insert(j["id"].get<std::string>());
  EXPECT_EQ(seen, (std::set<std::string>{ids[1], ids[2]})) << listed.body.dump();
  EXPECT_EQ(api.get("/ojs/v1/jobs/" + ids[0]).status, 200) << "only the index is bounded, the job stays readable";
}

// §7.2 and §7.4: the job itself, and retry of a discarded or cancelled job.
TEST_F(AdminApiSpec, JobDetailIsTheJobAndDiscardedOrCancelledJobsRetry) {
  const std::string q = "as-retry";
  const auto discarded = api.push(job_in(q, {{"retry", kOnce}}));
  nack_one(api, q);
  const auto cancelled = api.push(job_in(q));
  ASSERT_EQ(api.call("DELETE", "/ojs/v1/jobs/" + cancelled).status, 200);
  const auto waiting = api.push(job_in(q));

  auto detail = api.get("/ojs/v1/admin/jobs/" + discarded);
  ASSERT_EQ(detail.status, 200) << detail.body.dump();
  EXPECT_EQ(detail.body["id"], discarded) << detail.body.dump();
  EXPECT_EQ(detail.body["state"], "discarded");
  EXPECT_FALSE(detail.body.contains("job"));

  for (const auto& id : {discarded, cancelled}) {
    auto retried = api.post("/ojs/v1/admin/jobs/" + id + "/retry", json::object());
    ASSERT_EQ(retried.status, 200) << retried.body.dump();
    EXPECT_EQ(retried.body["job"]["state"], "available");
    EXPECT_EQ(retried.body["job"]["attempt"], 0);
  }
  EXPECT_EQ(api.get("/ojs/v1/admin/jobs?queue=" + q + "&state=discarded").body["items"].size(), 0u) << "left the finished index";
  EXPECT_EQ(api.get("/ojs/v1/admin/jobs?queue=" + q + "&state=available").body["pagination"]["total"], 3);
  auto refused = api.post("/ojs/v1/admin/jobs/" + waiting + "/retry", json::object());
  EXPECT_EQ(refused.status, 409) << refused.body.dump();
}

// §9.1: {items, summary, pagination}; hostname, last_heartbeat_at; a worker without
// capabilities counts the job it holds; queues = every queue it fetched from.
TEST_F(AdminApiSpec, WorkersListInTheSpecShape) {
  api.push(job_in("as-w1"));
  ASSERT_EQ(api.fetch({"as-w1"}, "plain").size(), 1u);
  EXPECT_EQ(api.fetch({"as-w2"}, "plain").size(), 0u);
  auto r = api.get("/ojs/v1/admin/workers");
  ASSERT_EQ(r.status, 200) << r.body.dump();
  ASSERT_EQ(r.body["items"].size(), 1u) << r.body.dump();
  const auto& w = r.body["items"][0];
  EXPECT_EQ(w["id"], "plain");
  EXPECT_TRUE(w.contains("hostname"));
  EXPECT_TRUE(w["last_heartbeat_at"].is_string());
  EXPECT_EQ(w["active_jobs"], 1) << w.dump();
  EXPECT_EQ(w["queues"], (json{"as-w1", "as-w2"})) << w.dump();
  EXPECT_EQ(r.body["summary"]["total"], 1);
  EXPECT_EQ(r.body["summary"]["running"], 1);
  EXPECT_EQ(r.body["pagination"]["total"], 1);
  EXPECT_EQ(r.body["workers"].size(), 1u) << "the old key stays for one release";
}

// §11.1 and the OpenAPI: pages, stats and the bulk retry of the dead letter.
TEST_F(AdminApiSpec, DeadLetterPagesStatsAndBulkRetry) {
  for (const std::string q : {"as-dl-a", "as-dl-a", "as-dl-b"}) {
    api.push(job_in(q, {{"retry", kDeadOnce}}));
    nack_one(api, q);
  }
  auto page = api.get("/ojs/v1/admin/dead-letter?per_page=2&page=2");
  ASSERT_EQ(page.status, 200) << page.body.dump();
  EXPECT_EQ(page.body["items"].size(), 1u) << page.body.dump();
  EXPECT_EQ(page.body["pagination"]["total"], 3);
  EXPECT_EQ(page.body["pagination"]["page"], 2);
  EXPECT_EQ(api.get("/ojs/v1/dead-letter?limit=2").body["jobs"].size(), 2u) << "limit/offset still work";
  const auto by_offset = api.get("/ojs/v1/admin/dead-letter?limit=2&offset=2").body["pagination"];
  EXPECT_EQ(by_offset["page"], 2) << by_offset.dump();
  EXPECT_EQ(by_offset["per_page"], 2);
  EXPECT_EQ(by_offset["offset"], 2);
  EXPECT_EQ(api.get("/ojs/v1/admin/dead-letter").body["pagination"]["page"], 1);

  auto stats = api.get("/ojs/v1/admin/dead-letter/stats");
  ASSERT_EQ(stats.status, 200) << stats.body.dump();
  EXPECT_EQ(stats.body["total"], 3);
  EXPECT_EQ(stats.body["by_queue"]["as-dl-a"], 2);

  auto retried = api.post("/ojs/v1/admin/dead-letter/retry", {{"queue", "as-dl-a"}});
  ASSERT_EQ(retried.status, 200) << retried.body.dump();
  EXPECT_EQ(retried.body["retried"], 2);
  EXPECT_EQ(api.get("/ojs/v1/admin/dead-letter/stats").body["total"], 1);
  EXPECT_EQ(api.post("/ojs/v1/admin/dead-letter/retry", json::object()).body["retried"], 1);
}

// §6.5 purge and §6.6 the spec's configuration body.
TEST_F(AdminApiSpec, PurgeQueueAndSpecConfigurationBody) {
  const std::string q = "as-purge";
  for (int i = 0; i < 2; ++i) {
    api.push(job_in(q));
    ack_one(api, q);
  }
  api.push(job_in(q));
  auto unconfirmed = api.call("DELETE", "/ojs/v1/admin/queues/" + q + "/jobs", {{"states", {"completed"}}});
  EXPECT_EQ(unconfirmed.status, 400);
  EXPECT_EQ(unconfirmed.body["error"]["details"]["field"], "confirm") << unconfirmed.body.dump();
  auto purged = api.call("DELETE", "/ojs/v1/admin/queues/" + q + "/jobs", {{"states", {"completed"}}, {"confirm", true}});
  ASSERT_EQ(purged.status, 200) << purged.body.dump();
  EXPECT_EQ(purged.body["purged_count"], 2);
  EXPECT_EQ(purged.body["states"], (json{"completed"}));
  EXPECT_EQ(api.get("/ojs/v1/admin/jobs?queue=" + q + "&state=completed").body["pagination"]["total"], 0);
  EXPECT_EQ(api.get("/ojs/v1/admin/jobs?queue=" + q + "&state=available").body["pagination"]["total"], 1);

  auto put = api.call("PUT", "/ojs/v1/admin/queues/" + q + "/config",
                      {{"concurrency", 30}, {"rate_limit", {{"limit", 2000}, {"period", "PT1H"}}},
                       {"retention", {{"completed", "P14D"}, {"discarded", "P90D"}}}});
  ASSERT_EQ(put.status, 200) << put.body.dump();
  auto detail = api.get("/ojs/v1/admin/queues/" + q);
  ASSERT_EQ(detail.status, 200);
  const auto& c = detail.body["configuration"];
  EXPECT_EQ(c["concurrency"], 30) << c.dump();
  EXPECT_EQ(c["rate_limit"]["limit"], 2000) << c.dump();
  EXPECT_EQ(c["rate_limit"]["period"], "PT1H");
  EXPECT_EQ(c["retention"]["completed"], "P14D");
  EXPECT_EQ(c["retention"]["discarded"], "P90D");
}

// Shapes of the official SDKs: cron (ojs-cron.md §8.2), queue stats and pause
// (ojs-http-binding.md §11.2, §11.3), with the old keys alongside.
TEST_F(AdminApiSpec, CronQueueStatsAndPauseInTheSdkShapes) {
  const json cron = {{"name", "nightly"}, {"cron", "0 3 * * *"}, {"type", "t"}, {"args", json::array()}, {"options", {{"queue", "as-cron"}}}};
  ASSERT_EQ(api.post("/ojs/v1/cron", cron).status, 201);
  for (const std::string path : {"/ojs/v1/cron", "/ojs/v1/crons"}) {
    auto list = api.get(path);
    ASSERT_EQ(list.status, 200) << path;
    EXPECT_EQ(list.body["cron_jobs"].size(), 1u) << path << " " << list.body.dump();
    EXPECT_EQ(list.body["count"], 1) << path;
    EXPECT_EQ(list.body["crons"].size(), 1u) << path;
  }
  // The admin dashboard's page: items and pagination, each item with its fields.
  const json other = {{"name", "hourly"}, {"expression", "0 * * * *"}, {"job_template", {{"type", "u"}, {"args", json::array()}}}};
  ASSERT_EQ(api.post("/ojs/v1/cron", other).status, 201);
  auto page = api.get("/ojs/v1/crons?page=1&per_page=1");
  ASSERT_EQ(page.status, 200) << page.body.dump();
  ASSERT_EQ(page.body["items"].size(), 1u) << page.body.dump();
  EXPECT_EQ(page.body["pagination"], (json{{"page", 1}, {"per_page", 1}, {"total", 2}}));
  EXPECT_EQ(page.body["crons"].size(), 2u) << "the old keys keep every cron";
  auto second = api.get("/ojs/v1/crons?page=2&per_page=1").body["items"];
  ASSERT_EQ(second.size(), 1u);
  std::map<std::string, json> by_name;
  for (const auto& item : {page.body["items"][0], second[0]}) by_name[item["name"].get<std::string>()] = item;
  ASSERT_EQ(by_name.size(), 2u);
  const auto& nightly = by_name["nightly"];
  EXPECT_EQ(nightly["id"], "nightly");
  EXPECT_EQ(nightly["type"], "t");
  EXPECT_EQ(nightly["queue"], "as-cron");
  EXPECT_EQ(nightly["schedule"], "0 3 * * *");
  EXPECT_EQ(nightly["timezone"], "UTC");
  EXPECT_EQ(nightly["enabled"], true);
  EXPECT_TRUE(nightly["next_run_at"].is_string());
  EXPECT_TRUE(nightly["last_run_at"].is_null());
  EXPECT_TRUE(nightly["created_at"].is_string());
  EXPECT_EQ(by_name["hourly"]["type"], "u");
  EXPECT_EQ(by_name["hourly"]["queue"], "default");
  ASSERT_EQ(api.call("DELETE", "/ojs/v1/cron/hourly").status, 200);

  auto one = api.get("/ojs/v1/cron/nightly");
  EXPECT_EQ(one.body["cron_job"]["name"], "nightly") << one.body.dump();
  EXPECT_EQ(one.body["cron"]["name"], "nightly");

  const std::string q = "as-sdk";
  api.push(job_in(q));
  auto stats = api.get("/ojs/v1/queues/" + q + "/stats");
  ASSERT_EQ(stats.status, 200) << stats.body.dump();
  // The OpenAPI's queue{...} and the binding's stats{...} side by side.
  EXPECT_EQ(stats.body["queue"]["name"], q) << stats.body.dump();
  EXPECT_EQ(stats.body["queue"]["available"], 1);
  EXPECT_EQ(stats.body["queue"]["active"], 0);
  EXPECT_EQ(stats.body["queue"]["completed"], 0);
  EXPECT_EQ(stats.body["queue"]["paused"], false);
  EXPECT_EQ(stats.body["status"], "active");
  EXPECT_EQ(stats.body["stats"]["available"], 1);
  EXPECT_EQ(stats.body["stats"]["queue"], q);
  EXPECT_EQ(stats.body["stats"]["depth"], 1);
  EXPECT_FALSE(stats.body["stats"].contains("max_depth")) << "no bound configured";
  EXPECT_TRUE(stats.body["computed_at"].is_string());
  for (const std::string base : {"/ojs/v1/queues/", "/ojs/v1/admin/queues/"}) {
    auto paused = api.post(base + q + "/pause", json::object());
    ASSERT_EQ(paused.status, 200) << paused.body.dump();
    EXPECT_EQ(paused.body["queue"]["name"], q) << paused.body.dump();
    EXPECT_EQ(paused.body["queue"]["paused"], true);
    EXPECT_EQ(paused.body["name"], q);
    EXPECT_EQ(paused.body["status"], "paused");
    EXPECT_TRUE(paused.body["paused_at"].is_string());
    EXPECT_EQ(paused.body["paused"], true);
    EXPECT_EQ(api.get("/ojs/v1/queues/" + q + "/stats").body["status"], "paused");
    auto resumed = api.post(base + q + "/resume", json::object());
    EXPECT_EQ(resumed.body["status"], "active") << resumed.body.dump();
    EXPECT_TRUE(resumed.body["paused_at"].is_null());
    EXPECT_EQ(resumed.body["queue"]["paused"], false);
  }
  // A configured depth bound is reported next to the depth (ojs-backpressure.md §8).
  ASSERT_EQ(api.call("PUT", "/ojs/v1/admin/queues/" + q + "/config", {{"backpressure", {{"max_depth", 10}}}}).status, 200);
  EXPECT_EQ(api.get("/ojs/v1/queues/" + q + "/stats").body["stats"]["max_depth"], 10);
}

// Endpoints no spec defines that the official dashboard calls: the workflow list and
// events as {items, pagination} with a timestamp on each.
TEST_F(AdminApiSpec, DashboardAliasesForWorkflowsAndEvents) {
  const json step = {{"type", "s"}, {"args", json::array()}, {"options", {{"queue", "as-wf"}}}};
  auto created = api.post("/ojs/v1/workflows", {{"type", "chain"}, {"name", "etl"}, {"steps", {step, step}}});
  ASSERT_EQ(created.status, 201) << created.body.dump();
  const auto id = created.body["workflow"]["id"];
  auto list = api.get("/ojs/v1/workflows");
  ASSERT_EQ(list.status, 200) << list.body.dump();
  ASSERT_EQ(list.body["items"].size(), 1u) << list.body.dump();
  EXPECT_EQ(list.body["items"][0]["id"], id);
  EXPECT_EQ(list.body["pagination"]["total"], 1);
  EXPECT_EQ(list.body["items"][0]["steps_total"], 2);
  EXPECT_EQ(list.body["items"][0]["steps_completed"], 0);

  // A fan-out's progress under the same names: 2/2 once both jobs finished.
  const json fan_step = {{"type", "s"}, {"args", json::array()}, {"options", {{"queue", "as-fan"}}}};
  auto group = api.post("/ojs/v1/workflows", {{"type", "group"}, {"name", "fan"}, {"jobs", {fan_step, fan_step}}});
  ASSERT_EQ(group.status, 201) << group.body.dump();
  ack_one(api, "as-fan");
  ack_one(api, "as-fan");
  const auto fan = api.get("/ojs/v1/workflows/" + group.body["workflow"]["id"].get<std::string>()).body["workflow"];
  EXPECT_EQ(fan["steps_total"], 2) << fan.dump();
  EXPECT_EQ(fan["steps_completed"], 2);
  EXPECT_EQ(fan["jobs_completed"], 2);

  auto events = api.get("/ojs/v1/events?limit=5");
  ASSERT_EQ(events.status, 200) << events.body.dump();
  ASSERT_FALSE(events.body["items"].empty()) << events.body.dump();
  for (const auto& e : events.body["items"]) EXPECT_TRUE(e["timestamp"].is_string()) << e.dump();
  EXPECT_TRUE(events.body["pagination"].is_object());
  EXPECT_EQ(events.body["events"].size(), events.body["items"].size()) << "the old key stays";
}
