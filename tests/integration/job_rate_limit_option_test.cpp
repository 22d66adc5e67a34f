// A job's options.rate_limit (ojs-rate-limiting.md, level 4's L4-RL-001) becomes its
// queue's rate limit when the queue has none, enforced at FETCH like a configured
// one; a configured limit is never replaced by a job's; a malformed option is a 400
// naming the field. A PUSH to such a queue answers the window's room in
// X-RateLimit-* (ojs-http-binding.md §18.1).
#include <gtest/gtest.h>

#include "ojs/client/http_client.hpp"
#include "ojs/core/time.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

json limited_job(const std::string& queue, const json& rate_limit) {
  return {{"type", "t"}, {"args", json::array()}, {"options", {{"queue", queue}, {"rate_limit", rate_limit}}}};
}

// A PUSH whose reply's headers the test reads.
ojs::HttpResponse push_raw(const std::string& url, const json& job) {
  ojs::HttpClient client({url});
  return client.request("POST", "/ojs/v1/jobs", job.dump(), {"Content-Type: application/openjobspec+json"});
}

}  // namespace

class JobRateLimitOption : public ::testing::Test {
 protected:
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
};

TEST_F(JobRateLimitOption, BecomesTheQueuesLimitWhenItHasNone) {
  // An hour's window: the second start waits whatever the machine's speed.
  api.push(limited_job("jrl-a", {{"max_per_hour", 1}}));
  api.push(limited_job("jrl-a", {{"max_per_hour", 1}}));
  const auto config = api.get("/ojs/v1/admin/queues/jrl-a/rate-limit");
  ASSERT_EQ(config.status, 200) << config.body.dump();
  EXPECT_EQ(config.body["rate_limit"]["rate"]["limit"], 1) << config.body.dump();
  EXPECT_EQ(config.body["rate_limit"]["rate"]["period"], "PT1H");
  EXPECT_EQ(api.fetch({"jrl-a"}, "w1").size(), 1u);
  EXPECT_EQ(api.fetch({"jrl-a"}, "w2").size(), 0u) << "the second start is over the limit";

  // The extension's form: rate with a period word, and concurrency.
  api.push(limited_job("jrl-b", {{"key", "k"}, {"rate", 5}, {"period", "minute"}, {"concurrency", 2}}));
  const auto b = api.get("/ojs/v1/admin/queues/jrl-b/rate-limit").body;
  EXPECT_EQ(b["rate_limit"]["rate"]["limit"], 5) << b.dump();
  EXPECT_EQ(b["rate_limit"]["rate"]["period"], "PT1M");
  EXPECT_EQ(b["rate_limit"]["concurrency"], 2);
}

// GET /ojs/v1/rate-limits/{key} (ojs-rate-limiting.md §10.1): the limit a job's
// rate_limit.key names, what it holds now and what waits; a queue's limit without a
// key is named by the queue. GET /ojs/v1/rate-limits lists them.
TEST_F(JobRateLimitOption, ItsStateIsInspectedByItsKey) {
  for (int i = 0; i < 3; ++i) api.push(limited_job("jrl-k", {{"key", "stripe-api"}, {"max_per_hour", 2}, {"concurrency", 5}}));
  EXPECT_EQ(api.fetch({"jrl-k"}, "w1").size(), 1u);
  const auto first = ojs::now_ms();
  EXPECT_EQ(api.fetch({"jrl-k"}, "w2").size(), 1u);
  EXPECT_EQ(api.fetch({"jrl-k"}, "w3").size(), 0u) << "the third start is over the limit";
  auto r = api.get("/ojs/v1/rate-limits/stripe-api");
  ASSERT_EQ(r.status, 200) << r.body.dump();
  EXPECT_EQ(r.body["key"], "stripe-api");
  EXPECT_EQ(r.body["queue"], "jrl-k");
  EXPECT_EQ(r.body["queues"], json({"jrl-k"}));
  EXPECT_EQ(r.body["concurrency"], (json{{"limit", 5}, {"active", 2}, {"available", 3}})) << r.body.dump();
  EXPECT_EQ(r.body["rate"]["limit"], 2);
  EXPECT_EQ(r.body["rate"]["period"], "PT1H");
  EXPECT_EQ(r.body["rate"]["current_count"], 2) << r.body.dump();
  const auto resets = ojs::parse_rfc3339(r.body["rate"]["window_resets_at"].get<std::string>()).value_or(0);
  EXPECT_NEAR(static_cast<double>(resets), static_cast<double>(first + 3600000), 2000.0) << r.body.dump();
  EXPECT_EQ(r.body["waiting_count"], 1);

  api.push({{"type", "t"}, {"args", json::array()}, {"options", {{"queue", "jrl-plain"}}}});
  ASSERT_EQ(api.call("PUT", "/ojs/v1/admin/queues/jrl-plain/config", {{"rate_limit", {{"concurrency", 1}}}}).status, 200);
  r = api.get("/ojs/v1/rate-limits/jrl-plain");
  ASSERT_EQ(r.status, 200) << r.body.dump();
  EXPECT_EQ(r.body["concurrency"]["limit"], 1);
  EXPECT_FALSE(r.body.contains("rate"));
  const auto list = api.get("/ojs/v1/rate-limits").body;
  EXPECT_EQ(list["pagination"]["total"], 2) << list.dump();
  EXPECT_EQ(list["items"].size(), 2u);
  EXPECT_EQ(api.get("/ojs/v1/rate-limits/nope").status, 404);
}

TEST_F(JobRateLimitOption, NeverReplacesAConfiguredLimit) {
  ASSERT_EQ(api.call("PUT", "/ojs/v1/admin/queues/jrl-c/config", {{"rate_limit", {{"concurrency", 7}}}}).status, 200);
  api.push(limited_job("jrl-c", {{"max_per_second", 1}}));
  const auto c = api.get("/ojs/v1/admin/queues/jrl-c/rate-limit").body;
  EXPECT_EQ(c["rate_limit"], (json{{"concurrency", 7}})) << c.dump();
}

TEST_F(JobRateLimitOption, AMalformedOptionIsA400NamingTheField) {
  const std::pair<json, std::string> bad[] = {
      {json("fast"), "options.rate_limit"},
      {{{"max_per_second", 0}}, "options.rate_limit.max_per_second"},
      {{{"max_per_second", 1}, {"rate", 2}}, "options.rate_limit.rate"},
      {{{"rate", 2}, {"period", "fortnight"}}, "options.rate_limit.period"},
      {{{"concurrency", "two"}}, "options.rate_limit.concurrency"},
      {{{"max_per_second", 1}, {"key", "no spaces"}}, "options.rate_limit.key"},
  };
  for (const auto& [option, field] : bad) {
    auto r = api.post("/ojs/v1/jobs", limited_job("jrl-d", option));
    EXPECT_EQ(r.status, 400) << option.dump() << " " << r.body.dump();
    EXPECT_EQ(r.body["error"]["details"]["field"], field) << r.body.dump();
  }
}

// The window's room rides on every PUSH to a queue with a start rate: the limit, the
// starts it has room for now, and when it next has room (Unix seconds). A queue
// without one answers none of them.
TEST_F(JobRateLimitOption, APushAnswersTheWindowsRoom) {
  const json job = limited_job("jrl-h", {{"key", "h"}, {"rate", 2}, {"period", "hour"}});
  auto first = push_raw(broker.url(), job);
  ASSERT_EQ(first.status, 201);
  EXPECT_EQ(first.headers["x-ratelimit-limit"], "2");
  EXPECT_EQ(first.headers["x-ratelimit-remaining"], "2") << "no start yet";
  EXPECT_EQ(api.fetch({"jrl-h"}, "w1").size(), 1u);
  const auto started = ojs::now_ms();
  auto second = push_raw(broker.url(), job);
  ASSERT_EQ(second.status, 201);
  EXPECT_EQ(second.headers["x-ratelimit-remaining"], "1");
  EXPECT_NEAR(std::stod(second.headers["x-ratelimit-reset"]), static_cast<double>(started + 3600000) / 1000, 3.0);
  EXPECT_EQ(api.fetch({"jrl-h"}, "w2").size(), 1u);
  EXPECT_EQ(push_raw(broker.url(), job).headers["x-ratelimit-remaining"], "0");

  const auto plain = push_raw(broker.url(), {{"type", "t"}, {"args", json::array()}, {"options", {{"queue", "jrl-none"}}}});
  ASSERT_EQ(plain.status, 201);
  EXPECT_EQ(plain.headers.count("x-ratelimit-limit"), 0u);
}
