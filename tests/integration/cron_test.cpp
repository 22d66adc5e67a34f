// Cron (spec/ojs-cron.md): registration API, exactly one job per tick across
// brokers sharing one Redis, and the skip overlap policy. Second-resolution
// expressions ("* * * * * *") keep the waits short.
#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

json cron(const std::string& name, const std::string& expr, const std::string& queue, json extra = json::object()) {
  json body = {{"name", name}, {"cron", expr}, {"type", "cron.tick"}, {"args", json::array({1})}, {"options", {{"queue", queue}}}};
  body.update(extra);
  return body;
}

// Drains a queue: every job's cron_triggered_at.
std::vector<std::string> drain(Api& api, const std::string& queue) {
  std::vector<std::string> ticks;
  for (;;) {
    auto jobs = api.fetch({queue}, "drainer", 10);
    if (jobs.empty()) return ticks;
    for (auto& j : jobs) {
      ticks.push_back(j["meta"]["cron_triggered_at"].get<std::string>());
      api.post("/ojs/v1/workers/ack", {{"job_id", j["id"]}});
    }
  }
}
}  // namespace

class Cron : public ::testing::Test {
 protected:
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
};

TEST_F(Cron, RegisterListGetDelete) {
  auto created = api.post("/ojs/v1/cron", cron("nightly", "0 3 * * *", "cron-a", {{"timezone", "Europe/Paris"}}));
  ASSERT_EQ(created.status, 201) << created.body.dump();
  EXPECT_EQ(created.body["cron"]["name"], "nightly");
  EXPECT_EQ(created.body["cron"]["enabled"], true);
  EXPECT_EQ(created.body["cron"]["overlap_policy"], "skip");
  EXPECT_EQ(created.body["cron"]["run_count"], 0);
  // 03:00 in Paris is 01:00 or 02:00 UTC.
  const auto next = created.body["cron"]["next_run_at"].get<std::string>();
  EXPECT_TRUE(next.find("T01:00:00") != std::string::npos || next.find("T02:00:00") != std::string::npos) << next;
  EXPECT_EQ(api.get("/ojs/v1/cron/nightly").body["cron"]["timezone"], "Europe/Paris");
  EXPECT_EQ(api.get("/ojs/v1/cron").body["crons"].size(), 1u);
  EXPECT_EQ(api.call("DELETE", "/ojs/v1/cron/nightly").status, 200);
  EXPECT_EQ(api.get("/ojs/v1/cron/nightly").status, 404);
  EXPECT_EQ(api.call("DELETE", "/ojs/v1/cron/nightly").status, 404);
  EXPECT_TRUE(api.get("/ojs/v1/cron").body["crons"].empty());
}

TEST_F(Cron, InvalidRegistrationsNameTheField) {
  auto field = [&](json body) { return api.post("/ojs/v1/cron", body).body["error"]["details"]["field"]; };
  EXPECT_EQ(field(cron("bad", "61 * * * *", "cron-b")), "cron");
  EXPECT_EQ(field(cron("bad", "* * * * *", "cron-b", {{"timezone", "Mars/Base"}})), "timezone");
  EXPECT_EQ(field(cron("Bad Name", "* * * * *", "cron-b")), "name");
  EXPECT_EQ(field(cron("bad", "* * * * *", "cron-b", {{"overlap_policy", "sometimes"}})), "overlap_policy");
  EXPECT_EQ(field({{"name", "bad"}, {"expression", "* * * * *"}, {"job_template", {{"args", json::array()}}}}), "job_template.type");
  EXPECT_TRUE(api.get("/ojs/v1/cron").body["crons"].empty());
}

// A zoneinfo directory is no zone: 400 naming the field (it was a 500,
// the directory read as a zone file).
TEST_F(Cron, ADirectoryOfZonesIsAnInvalidTimezone) {
  for (const char* zone : {"America", "Europe/"}) {
    const auto reply = api.post("/ojs/v1/cron", cron("bad", "* * * * *", "cron-b", {{"timezone", zone}}));
    EXPECT_EQ(reply.status, 400) << zone << ": " << reply.body.dump();
    EXPECT_EQ(reply.body["error"]["details"]["field"], "timezone") << zone;
  }
  EXPECT_TRUE(api.get("/ojs/v1/cron").body["crons"].empty());
}

TEST_F(Cron, EveryTickEnqueuesExactlyOnceAcrossTwoBrokers) {
  BrokerProcess second{redis.url()};
  ASSERT_EQ(api.post("/ojs/v1/cron", cron("every-second", "* * * * * *", "cron-c", {{"overlap_policy", "allow"}})).status, 201);
  sleep_ms(4500);
  ASSERT_EQ(api.call("DELETE", "/ojs/v1/cron/every-second").status, 200);
  const auto ticks = drain(api, "cron-c");
  EXPECT_GE(ticks.size(), 3u);
  EXPECT_EQ(std::set<std::string>(ticks.begin(), ticks.end()).size(), ticks.size()) << "a tick was enqueued twice";
}

TEST_F(Cron, SkipPolicyEnqueuesNothingWhileThePreviousRunIsActive) {
  ASSERT_EQ(api.post("/ojs/v1/cron", cron("skipper", "* * * * * *", "cron-d")).status, 201);
  json first;
  for (int i = 0; i < 100 && first.is_null(); ++i) {
    auto jobs = api.fetch({"cron-d"}, "w");
    if (!jobs.empty()) first = jobs[0];
    else sleep_ms(50);
  }
  ASSERT_FALSE(first.is_null());
  sleep_ms(2500);  // two or more ticks while the first run is active
  EXPECT_TRUE(api.fetch({"cron-d"}, "w").empty());
  EXPECT_GE(api.get("/ojs/v1/cron/skipper").body["cron"]["run_count"], 1);
  ASSERT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", first["id"]}}).status, 200);
  json next;
  for (int i = 0; i < 60 && next.is_null(); ++i) {  // once it is done, ticks enqueue again
    auto jobs = api.fetch({"cron-d"}, "w");
    if (!jobs.empty()) next = jobs[0];
    else sleep_ms(50);
  }
  EXPECT_FALSE(next.is_null());
  api.call("DELETE", "/ojs/v1/cron/skipper");
}

namespace {
// The first job of a queue, fetched as soon as a tick enqueues it.
json fetch_first(Api& api, const std::string& queue, int tries = 100) {
  for (int i = 0; i < tries; ++i) {
    auto jobs = api.fetch({queue}, "w");
    if (!jobs.empty()) return jobs[0];
    sleep_ms(50);
  }
  return json();
}
}  // namespace

TEST_F(Cron, CancelPreviousCancelsTheRunningJobAndEnqueuesTheTick) {
  ASSERT_EQ(api.post("/ojs/v1/cron", cron("latest-wins", "* * * * * *", "cron-e", {{"overlap_policy", "cancel_previous"}})).status, 201);
  EXPECT_EQ(api.get("/ojs/v1/cron/latest-wins").body["cron"]["overlap_policy"], "cancel_previous");
  const json first = fetch_first(api, "cron-e");
  ASSERT_FALSE(first.is_null());
  // The next tick cancels the active run and enqueues a new one.
  const json second = fetch_first(api, "cron-e", 100);
  api.call("DELETE", "/ojs/v1/cron/latest-wins");
  ASSERT_FALSE(second.is_null());
  EXPECT_NE(second["id"], first["id"]);
  EXPECT_EQ(api.get("/ojs/v1/jobs/" + first["id"].get<std::string>()).body["job"]["state"], "cancelled");
  EXPECT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", first["id"]}}).status, 409) << "the cancelled run's result is refused";
  EXPECT_GT(second["meta"]["cron_triggered_at"].get<std::string>(), first["meta"]["cron_triggered_at"].get<std::string>());
}

TEST_F(Cron, EnqueuePolicyKeepsEveryTickButNeverTwoRunsAtOnce) {
  ASSERT_EQ(api.post("/ojs/v1/cron", cron("in-turn", "* * * * * *", "cron-f", {{"overlap_policy", "enqueue"}})).status, 201);
  const json first = fetch_first(api, "cron-f");
  ASSERT_FALSE(first.is_null());
  // While it runs, ticks wait their turn: nothing to fetch, the cron counts them.
  json cron_view;
  for (int i = 0; i < 100; ++i) {
    cron_view = api.get("/ojs/v1/cron/in-turn").body["cron"];
    if (cron_view["deferred_runs"].get<int>() >= 2) break;
    sleep_ms(100);
  }
  EXPECT_GE(cron_view["deferred_runs"].get<int>(), 2) << cron_view.dump();
  EXPECT_TRUE(api.fetch({"cron-f"}, "w").empty()) << "no second run while the first is active";
  ASSERT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", first["id"]}}).status, 200);
  // Then the deferred ticks run one at a time, oldest first, each after the previous finished.
  std::vector<std::string> order{first["meta"]["cron_triggered_at"]};
  for (int run = 0; run < 2; ++run) {
    const json next = fetch_first(api, "cron-f");
    ASSERT_FALSE(next.is_null());
    EXPECT_TRUE(api.fetch({"cron-f"}, "w").empty()) << "one run at a time";
    order.push_back(next["meta"]["cron_triggered_at"]);
    ASSERT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", next["id"]}}).status, 200);
  }
  api.call("DELETE", "/ojs/v1/cron/in-turn");
  EXPECT_TRUE(std::is_sorted(order.begin(), order.end()));
  EXPECT_EQ(std::set<std::string>(order.begin(), order.end()).size(), order.size());
}
