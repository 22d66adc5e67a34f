// A worker sends its capabilities with every FETCH; the registry writes them to
// Redis only when they change (or after WorkerRegistry::kResendProfileMs), so an
// unchanged worker does not rewrite a few KB per FETCH.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

std::string stored_capabilities(const RedisServer& redis, const std::string& worker) {
  auto out = run_process({"redis-cli", "-p", std::to_string(redis.port()), "HGET", "ojs:{_global}:worker:" + worker, "capabilities"}, 10).output;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace

TEST(WorkerProfile, CapabilitiesAreWrittenWhenTheyChangeNotOnEveryFetch) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  json caps = example_worker("4xa100-pcie");
  api.fetch({"profile-q"}, "box", 1, {{"capabilities", caps}});
  ASSERT_EQ(json::parse(stored_capabilities(redis, "box")), caps);

  // Something else rewrote the record: an unchanged FETCH leaves it alone...
  run_process({"redis-cli", "-p", std::to_string(redis.port()), "HSET", "ojs:{_global}:worker:box", "capabilities", "{\"marker\":1}"}, 10);
  api.fetch({"profile-q"}, "box", 1, {{"capabilities", caps}});
  EXPECT_EQ(stored_capabilities(redis, "box"), "{\"marker\":1}") << "an unchanged profile is not written again";

  // ...and a changed one is written at once (here: a GPU turned unhealthy).
  caps["devices"][1]["healthy"] = false;
  api.fetch({"profile-q"}, "box", 1, {{"capabilities", caps}});
  EXPECT_EQ(json::parse(stored_capabilities(redis, "box")), caps);

  // Another worker's first FETCH is always written.
  api.fetch({"profile-q"}, "other", 1, {{"capabilities", caps}});
  EXPECT_EQ(json::parse(stored_capabilities(redis, "other")), caps);
}

// The preemption leader reads every worker's profile only when a waiting job could
// preempt (a head above rank 0): an idle cluster's leader pass reads no profile.
TEST(WorkerProfile, AnIdleClusterDoesNotReadEveryWorkerProfileEachPreemptionPass) {
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--preemption-interval-ms", "200"}};
  Api api{broker.url()};
  for (const auto& w : {"idle-a", "idle-b", "idle-c"}) api.fetch({"idle-q"}, w, 1, {{"capabilities", example_worker("4xa100-pcie")}});
  const auto seen = run_process({"timeout", "2", "redis-cli", "-p", std::to_string(redis.port()), "monitor"}, 10).output;
  std::size_t profile_reads = 0;
  for (std::size_t at = seen.find("\"HGETALL\" \"ojs:{_global}:worker:idle-"); at != std::string::npos;
       at = seen.find("\"HGETALL\" \"ojs:{_global}:worker:idle-", at + 1)) {
    const auto end = seen.find('\n', at);
    if (seen.substr(at, end - at).find(":jobs\"") == std::string::npos) ++profile_reads;
  }
  EXPECT_EQ(profile_reads, 0u) << "about ten leader passes ran in those two seconds";
}

// FETCH's capacity guards (a hold on this worker, any reservation) are read in the
// worker's contact pipeline, once per FETCH: not once per named queue and claim
// round, each a round trip of its own.
TEST(WorkerProfile, CapacityGuardsAreReadOncePerFetchWhateverTheQueues) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  std::vector<std::string> queues;
  for (int i = 0; i < 4; ++i) {  // each queue holds a job the worker cannot take: every queue is judged
    queues.push_back("guards-q" + std::to_string(i));
    api.push(ml_job(queues.back(), {{"ext_ml_gpu_count", 8}}));
  }
  std::string seen;
  std::thread monitor([&] { seen = run_process({"timeout", "3", "redis-cli", "-p", std::to_string(redis.port()), "monitor"}, 10).output; });
  std::this_thread::sleep_for(std::chrono::milliseconds(800));  // MONITOR is attached
  const auto got = api.fetch(queues, "guard-probe", 1, {{"capabilities", example_worker("4xa100-pcie")}});
  monitor.join();
  ASSERT_TRUE(got.empty()) << got.dump();
  std::size_t hold_reads = 0;
  const std::string read = "\"HGET\" \"ojs:{_global}:holds\" \"guard-probe\"";
  for (auto at = seen.find(read); at != std::string::npos; at = seen.find(read, at + 1)) ++hold_reads;
  EXPECT_EQ(hold_reads, 1u) << "one FETCH over " << queues.size() << " queues";
}
