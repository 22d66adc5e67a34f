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

// /ojs/v1/health and /metrics read the backend through the observability service,
// and the router maps the store's error through ojs::BackendUnavailable: while
// Redis is away, health names where it is, a scrape still answers (ojs_redis_up 0)
// and any other route is a retryable 503 backend_unavailable.
TEST(RedisOutage, HealthNamesTheBackendAndMetricsStillAnswer) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  ojs::HttpClientOptions options;
  options.base_url = broker.url();
  ojs::HttpClient http(options);
  api.push({{"type", "t"}, {"args", json::array()}, {"options", {{"queue", "outage-h"}}}});
  auto has_line = [](const std::string& text, const std::string& line) { return ("\n" + text).find("\n" + line + "\n") != std::string::npos; };
  ASSERT_TRUE(has_line(http.get("/metrics").body, "ojs_redis_up 1"));

  redis.kill9();
  auto health = api.get("/ojs/v1/health");
  EXPECT_EQ(health.status, 503) << health.body.dump();
  EXPECT_EQ(health.body["status"], "unhealthy");
  EXPECT_EQ(health.body["backend"]["status"], "disconnected");
  EXPECT_EQ(health.body["backend"]["error"], "cannot reach Redis at 127.0.0.1:" + std::to_string(redis.port())) << health.body.dump();
  const auto scrape = http.get("/metrics");
  EXPECT_EQ(scrape.status, 200);
  EXPECT_TRUE(has_line(scrape.body, "ojs_redis_up 0")) << scrape.body;
  EXPECT_FALSE(has_line(scrape.body, "ojs_queue_jobs{queue=\"outage-h\",state=\"available\"} 1")) << "no cluster gauges without Redis";
  for (const std::string path : {"/ojs/v1/queues", "/ojs/v1/queues/outage-h/stats", "/ojs/v1/admin/overview"}) {
    auto r = api.get(path);
    EXPECT_EQ(r.status, 503) << path << " " << r.body.dump();
    EXPECT_EQ(r.body["error"]["code"], "backend_unavailable") << path;
    EXPECT_EQ(r.body["error"]["retryable"], true) << path;
  }

  redis.start();
  EXPECT_EQ(api.get("/ojs/v1/health").body["backend"]["status"], "connected");
  EXPECT_TRUE(has_line(http.get("/metrics").body, "ojs_redis_up 1"));
}
