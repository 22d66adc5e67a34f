// Log follows share --max-event-streams with the event streams (one count, taken for
// as long as a follow is open; 0 allows none), and a follow whose client does not
// read keeps only about a page of frames waiting, whatever the log holds.
#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "support/processes.hpp"
#include "support/sse_client.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

// The broker's resident memory (VmRSS), in bytes.
long long rss_bytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  return -1;
}

std::string running_job(Api& api, const std::string& queue) {
  const auto id = api.push({{"type", "t"}, {"args", json::array()}, {"options", {{"queue", queue}}}});
  EXPECT_EQ(api.fetch({queue}, "w1").size(), 1u);
  return id;
}

}  // namespace

TEST(LogFollowLimits, FollowsAndEventStreamsShareOneLimit) {
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--max-event-streams", "2"}};
  Api api{broker.url()};
  const auto id = running_job(api, "lfl");
  const std::string follow_path = "/ojs/v1/jobs/" + id + "/logs?follow=true";
  SseClient first(broker.port(), follow_path);
  ASSERT_EQ(first.status(), 200) << first.error_body();
  SseClient second(broker.port(), follow_path);
  ASSERT_EQ(second.status(), 200) << second.error_body();
  // Both slots are taken: neither another follow nor an event stream opens.
  SseClient third(broker.port(), follow_path);
  EXPECT_EQ(third.status(), 503);
  const auto refused = json::parse(third.error_body(), nullptr, false);
  ASSERT_TRUE(refused.is_object()) << third.error_body();
  EXPECT_EQ(refused["error"]["details"]["reason"], "too_many_streams") << refused.dump();
  EXPECT_EQ(refused["error"]["hint"].get<std::string>().find("store is unreachable"), std::string::npos) << refused.dump();
  EXPECT_FALSE(third.header("retry-after").empty());
  SseClient events(broker.port(), "/ojs/v1/events/stream");
  EXPECT_EQ(events.status(), 503) << "an event stream opened beside two log follows with --max-event-streams 2";
}

TEST(LogFollowLimits, NoStreamsMeansNoFollow) {
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--max-event-streams", "0"}};
  Api api{broker.url()};
  const auto id = running_job(api, "lfl0");
  SseClient follow(broker.port(), "/ojs/v1/jobs/" + id + "/logs?follow=true");
  EXPECT_EQ(follow.status(), 503) << "--max-event-streams 0 let a follow open";
}

TEST(LogFollowLimits, AClientThatDoesNotReadHoldsAboutAPage) {
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--job-log-max-bytes", std::to_string(64 << 20)}};
  Api api{broker.url()};
  const auto id = running_job(api, "lfl-slow");
  const std::string mib(1 << 20, 'x');
  for (int i = 0; i < 64; i += 3) {
    json body = {{"worker_id", "w1"}, {"job_id", id}, {"chunks", json::array()}};
    for (int k = 0; k < 3 && i + k < 64; ++k) body["chunks"].push_back({{"stream", "stdout"}, {"data", mib}});
    ASSERT_EQ(api.post("/ojs/v1/workers/logs", body).status, 200);
  }
  const auto before = rss_bytes(broker.pid());
  ASSERT_GT(before, 0);
  // The follow's client reads its head and nothing more.
  SseClient follow(broker.port(), "/ojs/v1/jobs/" + id + "/logs?follow=true");
  ASSERT_EQ(follow.status(), 200);
  std::this_thread::sleep_for(std::chrono::seconds(3));  // many reader polls (every 200 ms)
  const auto grown = rss_bytes(broker.pid()) - before;
  EXPECT_LT(grown, 24LL << 20) << "the broker holds " << (grown >> 20) << " MiB more for one follow whose client does not read";
}
