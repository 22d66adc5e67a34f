// The class-head index (keys.hpp class_heads): claim finds the best job of all the
// worker's eligible classes by reading the index, not each class's ready set, so
// the index must equal the ready sets' heads after every kind of transition, and a
// Redis written before the index existed must be repaired before jobs go unseen.
#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <set>
#include <sstream>

#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

std::vector<std::string> redis_lines(const RedisServer& redis, std::vector<std::string> argv) {
  argv.insert(argv.begin(), {"redis-cli", "-p", std::to_string(redis.port())});
  std::istringstream out(run_process(argv, 10).output);
  std::vector<std::string> lines;
  for (std::string line; std::getline(out, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

// Every class of the queue: the index lists it with its ready set's first score, or
// not at all when the set is empty. Returns the mismatches, readable.
std::string index_mismatches(const RedisServer& redis, const std::string& queue) {
  const std::string p = "ojs:{" + queue + "}:";
  std::string out;
  for (const auto& cls : redis_lines(redis, {"HKEYS", p + "classes"})) {
    const auto head = redis_lines(redis, {"ZRANGE", p + "ready:" + cls, "0", "0", "WITHSCORES"});
    const auto listed = redis_lines(redis, {"ZSCORE", p + "heads", cls});
    const std::string truth = head.size() == 2 ? head[1] : "(empty)";
    const std::string index = listed.empty() ? "(absent)" : listed[0];
    if ((head.empty() && !listed.empty()) || (!head.empty() && (listed.empty() || listed[0] != head[1])))
      out += "class " + cls + ": ready set head " + truth + ", index " + index + "\n";
  }
  return out;
}

json caps_of(const std::string& name) { return {{"capabilities", example_worker(name)}}; }

}  // namespace

TEST(ClassHeads, IndexMatchesTheReadySetsThroughEveryKindOfTransition) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  const std::string q = "heads-q";
  const json retry_now = {{"max_attempts", 3}, {"initial_interval", "PT0S"}, {"backoff_coefficient", 1.0}, {"jitter", false}};
  // Three classes (1 GPU, 2 GPUs, no requirements), two priorities.
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) {
    json one = ml_job(q, {{"ext_ml_gpu_count", 1}});
    one["options"]["retry"] = retry_now;
    if (i == 2) one["options"]["priority"] = 5;
    ids.push_back(api.push(one));
    ids.push_back(api.push(ml_job(q, {{"ext_ml_gpu_count", 2}})));
    ids.push_back(api.push(job_in(q, retry_now)));
  }
  ASSERT_EQ(index_mismatches(redis, q), "") << "after PUSH";

  // CANCEL a head and a job behind it.
  ASSERT_EQ(api.call("DELETE", "/ojs/v1/jobs/" + ids[0]).status, 200);
  ASSERT_EQ(api.call("DELETE", "/ojs/v1/jobs/" + ids[7]).status, 200);
  EXPECT_EQ(index_mismatches(redis, q), "") << "after CANCEL";

  // A scheduled job, due in a second (promoted by a claim or the maintenance loop).
  json later = job_in(q);
  later["scheduled_at"] = iso_in(std::chrono::seconds(1));
  const auto scheduled = api.push(later);
  EXPECT_EQ(index_mismatches(redis, q), "") << "after a scheduled PUSH";
  sleep_ms(2500);  // due within two seconds (whole-second timestamp, rounded up)
  EXPECT_EQ(index_mismatches(redis, q), "") << "after the scheduled job became available";

  // FETCH by a capable worker (one by one) and a plain worker (several at once).
  std::set<std::string> delivered;
  for (int i = 0; i < 3; ++i)
    for (const auto& j : api.fetch({q}, "dgx", 1, caps_of("dgx-h100"))) delivered.insert(j["id"].get<std::string>());
  EXPECT_EQ(index_mismatches(redis, q), "") << "after capability FETCH";
  const auto plain = api.fetch({q}, "plain", 2);
  for (const auto& j : plain) delivered.insert(j["id"].get<std::string>());
  EXPECT_EQ(index_mismatches(redis, q), "") << "after plain FETCH";

  // NACK with an immediate retry: the job comes back into its ready set.
  ASSERT_FALSE(plain.empty());
  const auto nacked = plain[0]["id"].get<std::string>();
  const auto nack = api.post("/ojs/v1/workers/nack", {{"job_id", nacked}, {"worker_id", "plain"},
                                                        {"error", {{"code", "boom"}, {"message", "retry me"}}}});
  ASSERT_EQ(nack.status, 200) << nack.body.dump();
  sleep_ms(600);  // the maintenance loop promotes the due retry
  EXPECT_EQ(index_mismatches(redis, q), "") << "after NACK and retry";

  // Drain: every job not cancelled is delivered once, and the index ends empty.
  std::set<std::string> all;
  for (const auto& j : delivered) all.insert(j);
  for (int round = 0; round < 50; ++round) {
    auto jobs = api.fetch({q}, "dgx", 1, caps_of("dgx-h100"));
    if (jobs.empty()) jobs = api.fetch({q}, "plain", 3);
    if (jobs.empty()) break;
    for (const auto& j : jobs) {
      const auto id = j["id"].get<std::string>();
      if (id != nacked) EXPECT_TRUE(all.insert(id).second) << id << " delivered twice";
      ASSERT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", id}}).status, 200);
    }
  }
  EXPECT_EQ(all.size(), ids.size() - 2 + 1) << "every job but the two cancelled, plus the scheduled one";
  EXPECT_TRUE(all.count(scheduled));
  EXPECT_EQ(index_mismatches(redis, q), "") << "after the drain";
  EXPECT_EQ(redis_lines(redis, {"ZCARD", "ojs:{" + q + "}:heads"}), std::vector<std::string>{"0"});
}

TEST(ClassHeads, ClassesAreTakenByPriorityThenSoftScoreThenAge) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  const auto fetch_order = [&](const std::string& q, const std::string& worker, int n) {
    std::vector<std::string> order;
    for (int i = 0; i < n; ++i) {
      auto jobs = api.fetch({q}, worker, 1, caps_of("dgx-h100"));
      if (jobs.size() != 1u) break;
      order.push_back(jobs[0]["id"].get<std::string>());
    }
    return order;
  };
  // Three classes with the same soft score (1 GPU each): priority, then age.
  const std::string q = "heads-order";
  const auto first = api.push(ml_job(q, {{"ext_ml_gpu_count", 1}, {"ext_ml_gpu_memory_gb", 40}}));
  json high = ml_job(q, {{"ext_ml_gpu_count", 1}, {"ext_ml_gpu_memory_gb", 60}});
  high["options"]["priority"] = 10;
  const auto urgent = api.push(high);
  const auto second = api.push(ml_job(q, {{"ext_ml_gpu_count", 1}, {"ext_ml_gpu_memory_gb", 80}}));
  const auto third = api.push(ml_job(q, {{"ext_ml_gpu_count", 1}, {"ext_ml_gpu_memory_gb", 40}}));
  EXPECT_EQ(fetch_order(q, "dgx-a", 4), (std::vector<std::string>{urgent, first, second, third}));

  // Within one priority a higher soft score wins over age: on an 8-GPU worker the
  // 4-GPU job packs better than the older 1-GPU job, and the 8-GPU job best of all;
  // a younger head with a lower score never jumps an older one with the same score.
  const std::string p = "heads-bonus";
  const auto small = api.push(ml_job(p, {{"ext_ml_gpu_count", 1}}));
  const auto half = api.push(ml_job(p, {{"ext_ml_gpu_count", 4}}));
  const auto whole = api.push(ml_job(p, {{"ext_ml_gpu_count", 8}}));
  // A fresh 8-GPU worker: the whole-machine job fits best; then, on a second fresh
  // one, the 4-GPU job beats the older 1-GPU job.
  EXPECT_EQ(fetch_order(p, "dgx-b", 1), std::vector<std::string>{whole});
  EXPECT_EQ(fetch_order(p, "dgx-c", 1), std::vector<std::string>{half});
  EXPECT_EQ(fetch_order(p, "dgx-d", 1), std::vector<std::string>{small});
}

TEST(ClassHeads, ABrokerUpgradedFromBeforeTheIndexStillHandsOutQueuedJobs) {
  RedisServer redis;
  std::string a, b;
  {
    BrokerProcess broker{redis.url()};
    Api api{broker.url()};
    a = api.push(ml_job("heads-upgrade", {{"ext_ml_gpu_count", 1}}));
    b = api.push(job_in("heads-upgrade"));
    broker.stop();
  }
  // The layout before the index: ready sets only.
  ASSERT_EQ(redis_lines(redis, {"DEL", "ojs:{heads-upgrade}:heads"}), std::vector<std::string>{"1"});

  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  std::set<std::string> got;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (got.size() < 2 && std::chrono::steady_clock::now() < until) {
    for (const auto& j : api.fetch({"heads-upgrade"}, "dgx", 1, caps_of("dgx-h100"))) got.insert(j["id"].get<std::string>());
    if (got.size() < 2) sleep_ms(100);
  }
  EXPECT_EQ(got, (std::set<std::string>{a, b})) << "the maintenance loop's first pass rebuilds the index";
  EXPECT_EQ(index_mismatches(redis, "heads-upgrade"), "");
}

TEST(ClassHeads, IndexStaysExactWithTwoBrokersPushingFetchingAndCancellingAtOnce) {
  RedisServer redis;
  BrokerProcess a{redis.url()};
  BrokerProcess b{redis.url()};
  const std::string q = "heads-race";
  constexpr int kJobs = 240;
  std::mutex mutex;
  std::set<std::string> pushed, cancelled;
  std::multiset<std::string> completed, cancelled_while_active;
  std::vector<std::thread> threads;
  // Two producers (one per broker): five classes, three priorities; every tenth job is
  // cancelled right away, so ready-set heads leave by CANCEL as well as by claim.
  for (int p = 0; p < 2; ++p)
    threads.emplace_back([&, p] {
      Api api{p == 0 ? a.url() : b.url()};
      std::mt19937 rng(p + 1);
      for (int i = 0; i < kJobs / 2; ++i) {
        const int gpus = static_cast<int>(rng() % 5);
        json job = gpus == 0 ? job_in(q) : ml_job(q, {{"ext_ml_gpu_count", gpus}});
        job["options"]["priority"] = static_cast<int>(rng() % 3) * 5;
        const auto id = api.push(job);
        bool cancel = i % 10 == 9 && api.call("DELETE", "/ojs/v1/jobs/" + id).status == 200;
        std::lock_guard lock(mutex);
        pushed.insert(id);
        if (cancel) cancelled.insert(id);
      }
    });
  // Four workers (two per broker) take and complete jobs while the producers run.
  std::atomic<int> producers_done{0};
  for (int w = 0; w < 4; ++w)
    threads.emplace_back([&, w] {
      Api api{w % 2 == 0 ? a.url() : b.url()};
      const std::string id = "race-" + std::to_string(w);
      for (int idle = 0; idle < 20;) {
        auto jobs = api.fetch({q}, id, 1, caps_of("dgx-h100"));
        if (jobs.empty()) jobs = api.fetch({q}, id + "-plain", 2);
        if (jobs.empty()) {
          if (producers_done.load() == 2) ++idle;
          sleep_ms(20);
          continue;
        }
        for (const auto& j : jobs) {
          const auto job_id = j["id"].get<std::string>();
          const int status = api.post("/ojs/v1/workers/ack", {{"job_id", job_id}}).status;
          std::lock_guard lock(mutex);
          // 409: the producer cancelled it while it ran (CANCEL applies to active jobs too).
          (status == 200 ? completed : cancelled_while_active).insert(job_id);
        }
      }
    });
  threads[0].join();
  threads[1].join();
  producers_done = 2;
  for (std::size_t t = 2; t < threads.size(); ++t) threads[t].join();
  std::set<std::string> unique(completed.begin(), completed.end());
  EXPECT_EQ(unique.size(), completed.size()) << "a job was delivered twice";
  EXPECT_EQ(completed.size() + cancelled.size(), pushed.size()) << "every job is completed or cancelled";
  for (const auto& id : cancelled_while_active) EXPECT_TRUE(cancelled.count(id)) << id << ": ACK refused, yet not cancelled";
  EXPECT_EQ(index_mismatches(redis, q), "");
  EXPECT_EQ(redis_lines(redis, {"ZCARD", "ojs:{" + q + "}:heads"}), std::vector<std::string>{"0"});
}
