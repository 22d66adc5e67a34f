// Redis going away gives 503s with an OJS error, and the broker recovers.
#include <gtest/gtest.h>

#include <thread>

#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

TEST(RedisOutage, ServesServiceUnavailableThenRecovers) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  const auto before = api.push({{"type", "t"}, {"args", json::array()}, {"options", {{"queue", "outage"}}}});

  redis.kill9();
  auto push = api.post("/ojs/v1/jobs", {{"type", "t"}, {"args", json::array()}});
  EXPECT_EQ(push.status, 503);
  EXPECT_EQ(push.body["error"]["retryable"], true);
  EXPECT_FALSE(push.body["error"]["message"].get<std::string>().empty());
  EXPECT_EQ(api.get("/ojs/v1/health").status, 503);
  EXPECT_EQ(api.post("/ojs/v1/workers/fetch", {{"queues", {"outage"}}}).status, 503);
  EXPECT_EQ(api.get("/ojs/v1/jobs/" + before).status, 503);

  redis.start();  // same port, empty data set (this test's Redis has no persistence)
  EXPECT_EQ(api.get("/ojs/v1/health").status, 200);
  const auto after = api.push({{"type", "t"}, {"args", json::array()}, {"options", {{"queue", "outage"}}}});
  auto jobs = api.fetch({"outage"}, "w");
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0]["id"], after);
}
