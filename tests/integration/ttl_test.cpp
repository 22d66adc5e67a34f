// Job TTL (options.expires_at): a job past its expiry is discarded, never delivered.
#include <gtest/gtest.h>

#include <thread>

#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

TEST(JobTtl, AnExpiredJobIsDiscardedInsteadOfDelivered) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  const auto expiring = api.push({{"type", "ttl.x"}, {"args", json::array()}, {"options", {{"queue", "ttl-q"}, {"expires_at", "+PT1S"}}}});
  const auto lasting = api.push({{"type", "ttl.y"}, {"args", json::array()}, {"options", {{"queue", "ttl-q"}, {"expires_at", "2099-01-01T00:00:00Z"}}}});
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  auto jobs = api.fetch({"ttl-q"}, "w", 5);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0]["id"], lasting);
  auto info = api.get("/ojs/v1/jobs/" + expiring).body["job"];
  EXPECT_EQ(info["state"], "discarded");
  EXPECT_FALSE(info.contains("completed_at"));
  auto events = api.get("/ojs/v1/events?types=job.discarded&job_id=" + expiring).body["events"];
  EXPECT_EQ(events.size(), 1u);
}
