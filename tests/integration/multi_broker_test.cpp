// Two broker processes on one Redis never hand one job to two workers.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

TEST(MultiBroker, ConcurrentFetchersAcrossTwoBrokersNeverShareAJob) {
  RedisServer redis;
  BrokerProcess a{redis.url()};
  BrokerProcess b{redis.url()};
  constexpr int kJobs = 600;
  {
    Api producer{a.url()};
    for (int i = 0; i < kJobs; ++i) producer.push({{"type", "t"}, {"args", {i}}, {"options", {{"queue", "race"}}}});
  }
  std::mutex mutex;
  std::multiset<std::string> delivered;
  std::vector<std::thread> workers;
  for (int w = 0; w < 8; ++w) {
    workers.emplace_back([&, w] {
      Api api{w % 2 == 0 ? a.url() : b.url()};
      for (int empty = 0; empty < 3;) {
        auto jobs = api.fetch({"race"}, "w" + std::to_string(w), 3);
        if (jobs.empty()) {
          ++empty;
          continue;
        }
        for (const auto& j : jobs) {
          {
            std::lock_guard lock(mutex);
            delivered.insert(j["id"].get<std::string>());
          }
          EXPECT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", j["id"]}}).status, 200);
        }
      }
    });
  }
  for (auto& t : workers) t.join();
  EXPECT_EQ(delivered.size(), static_cast<size_t>(kJobs));
  std::set<std::string> unique(delivered.begin(), delivered.end());
  EXPECT_EQ(unique.size(), delivered.size()) << "a job was delivered twice";
}
