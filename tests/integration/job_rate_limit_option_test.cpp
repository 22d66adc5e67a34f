// A job's options.rate_limit (ojs-rate-limiting.md, level 4's L4-RL-001) becomes its
// queue's rate limit when the queue has none, enforced at FETCH like a configured
// one; a configured limit is never replaced by a job's; a malformed option is a 400
// naming the field.
#include <gtest/gtest.h>

#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

json limited_job(const std::string& queue, const json& rate_limit) {
  return {{"type", "t"}, {"args", json::array()}, {"options", {{"queue", queue}, {"rate_limit", rate_limit}}}};
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
  };
  for (const auto& [option, field] : bad) {
    auto r = api.post("/ojs/v1/jobs", limited_job("jrl-d", option));
    EXPECT_EQ(r.status, 400) << option.dump() << " " << r.body.dump();
    EXPECT_EQ(r.body["error"]["details"]["field"], field) << r.body.dump();
  }
}
