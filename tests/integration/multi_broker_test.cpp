// Two broker processes on one Redis never hand one job to two workers.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

#include "support/ml_fixtures.hpp"
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

namespace {

json cfg_job(const std::string& queue, json attrs = json::object()) {
  json j = {{"type", "t"}, {"args", json::array()}, {"options", {{"queue", queue}}}};
  for (auto it = attrs.begin(); it != attrs.end(); ++it) j[it.key()] = it.value();
  return j;
}

void put_config(Api& api, const std::string& queue, const json& body) {
  auto r = api.call("PUT", "/ojs/v1/admin/queues/" + queue + "/config", body);
  ASSERT_EQ(r.status, 200) << r.body.dump();
}

}  // namespace

// PUSH applies a broker's cached copy of the queue config, and push.lua checks that
// its version is current: a config written through broker B (limits, defaults,
// policy) applies to the very next PUSH through broker A, which had the old one cached.
TEST(MultiBroker, AQueueConfigChangedOnOneBrokerAppliesToTheNextPushOnTheOther) {
  RedisServer redis;
  BrokerProcess a{redis.url()};
  BrokerProcess b{redis.url()};
  Api on_a{a.url()}, on_b{b.url()};
  ASSERT_EQ(on_a.post("/ojs/v1/jobs", cfg_job("cfg", {{"ext_ml_gpu_count", 4}})).status, 201);  // A caches config v0

  put_config(on_b, "cfg", {{"ml_limits", {{"max_gpu_count", 2}}}});
  auto r = on_a.post("/ojs/v1/jobs", cfg_job("cfg", {{"ext_ml_gpu_count", 4}}));
  EXPECT_EQ(r.status, 422) << "broker A pushed under its stale config: " << r.body.dump();
  EXPECT_EQ(r.body["error"]["details"]["limit"], "max_gpu_count") << r.body.dump();

  put_config(on_b, "cfg", {{"ml_limits", {{"max_gpu_count", 2}}}, {"ml_defaults", {{"ext_ml_gpu_type", "nvidia-h100"}}}});
  const auto id = on_a.push(cfg_job("cfg", {{"ext_ml_gpu_count", 1}}));
  EXPECT_EQ(on_a.get("/ojs/v1/jobs/" + id).body["job"]["ext_ml_gpu_type"], "nvidia-h100") << "B's new default was not applied";

  // Policy: under fifo a later high-priority job waits behind an earlier low one.
  on_a.push(cfg_job("cfg-order"));  // A caches the priority policy
  ASSERT_EQ(on_a.fetch({"cfg-order"}, "w0", 1).size(), 1u);
  put_config(on_b, "cfg-order", {{"policy", "fifo"}});
  json low = cfg_job("cfg-order"), high = cfg_job("cfg-order");
  low["options"]["priority"] = -10;
  high["options"]["priority"] = 10;
  const auto first = on_a.push(low);
  on_a.push(high);
  const auto fetched = on_a.fetch({"cfg-order"}, "w1", 1);
  ASSERT_EQ(fetched.size(), 1u);
  EXPECT_EQ(fetched[0]["id"], first) << "broker A scored the job under its cached priority policy, not B's fifo";
}

// A queue deleted through broker B is registered again by the next PUSH through
// broker A, although A saw the queue a moment before (the delete bumps the config
// version, so A's push.lua check sends A back to a fresh read and the directory write).
TEST(MultiBroker, APushAfterAQueueIsDeletedOnTheOtherBrokerRegistersItAgain) {
  RedisServer redis;
  BrokerProcess a{redis.url()};
  BrokerProcess b{redis.url()};
  Api on_a{a.url()}, on_b{b.url()};
  const auto id = on_a.push(cfg_job("cfg-del"));
  ASSERT_EQ(on_a.call("DELETE", "/ojs/v1/jobs/" + id).status, 200);
  ASSERT_EQ(on_b.call("DELETE", "/ojs/v1/admin/queues/cfg-del").status, 200);
  on_a.push(cfg_job("cfg-del"));
  const auto queues = on_b.get("/ojs/v1/queues").body;
  std::set<std::string> listed;
  for (const auto& q : queues["queues"]) listed.insert(q["name"].get<std::string>());
  EXPECT_TRUE(listed.count("cfg-del")) << "the queue holds a job but is missing from the queue directory: " << queues.dump();
  EXPECT_EQ(on_b.get("/ojs/v1/queues/cfg-del/stats").body["stats"]["available"], 1);
}

// Two brokers (one walking the class heads, one judging every class) and racing
// workers with hardware, jobs over 40 classes: no job is claimed twice, and at no
// moment does the queue hold more GPUs than its budget or a tenant more than its
// quota. Correctness never rests on a broker's view of the queue, only on the claim.
TEST(MultiBroker, RacingBrokersNeverExceedABudgetOrATenantQuota) {
  RedisServer redis;
  BrokerProcess a{redis.url(), {"--fetch-walk-min-classes", "0"}};
  BrokerProcess b{redis.url(), {"--fetch-walk-min-classes", "100000"}};
  constexpr int kBudget = 6, kQuotaA = 2, kJobs = 160;
  {
    Api admin{a.url()};
    put_config(admin, "budget-race", {{"budgets", {{"max_total_gpus", kBudget}}},
                                      {"tenant_quotas", {{"tenants", {{"team-a", {{"max_gpus", kQuotaA}}}}}}}});
    for (int i = 0; i < kJobs; ++i) {
      auto job = cfg_job("budget-race", {{"ext_ml_gpu_count", 1 + i % 2}, {"ext_ml_gpu_memory_gb", 1 + i % 40}});
      job["meta"] = {{"tenant_id", i % 3 == 0 ? "team-a" : "team-b"}};
      admin.push(job);
    }
  }
  const json caps = {{"capabilities", {{"accelerator", "gpu"}, {"gpu", {{"type", "nvidia-h100"}, {"count", 8}, {"memory_gb", 80}}}}}};
  std::mutex mutex;
  std::multiset<std::string> delivered;
  int held = 0, held_a = 0, most = 0, most_a = 0;
  std::vector<std::thread> workers;
  for (int w = 0; w < 6; ++w) {
    workers.emplace_back([&, w] {
      Api api{w % 2 == 0 ? a.url() : b.url()};
      const std::string id = "bw" + std::to_string(w);
      for (int empty = 0; empty < 20;) {
        auto jobs = api.fetch({"budget-race"}, id, 1, caps);
        if (jobs.empty()) {
          ++empty;
          std::this_thread::sleep_for(std::chrono::milliseconds(5));  // the others' ACKs free budget
          continue;
        }
        const auto& j = jobs[0];
        const int gpus = j.value("ext_ml_gpu_count", 0);
        const bool team_a = j["meta"].value("tenant_id", std::string()) == "team-a";
        {
          std::lock_guard lock(mutex);
          delivered.insert(j["id"].get<std::string>());
          held += gpus;
          held_a += team_a ? gpus : 0;
          most = std::max(most, held);
          most_a = std::max(most_a, held_a);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(3));  // the job's run, while the others fetch
        // Counted free before the ACK is sent (the broker frees it at the ACK, never
        // earlier): the count never exceeds what the broker holds.
        {
          std::lock_guard lock(mutex);
          held -= gpus;
          held_a -= team_a ? gpus : 0;
        }
        EXPECT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", j["id"]}, {"worker_id", id}}).status, 200);
      }
    });
  }
  for (auto& t : workers) t.join();
  EXPECT_EQ(delivered.size(), static_cast<size_t>(kJobs));
  std::set<std::string> unique(delivered.begin(), delivered.end());
  EXPECT_EQ(unique.size(), delivered.size()) << "a job was delivered twice";
  EXPECT_LE(most, kBudget);
  EXPECT_LE(most_a, kQuotaA);
}

// An elastic gang raced by workers of two brokers never gets more members than its
// max_size; members told to leave it (the commit raced from several clients at once)
// never take it below its min_size; releases raced through both brokers take each
// leaving member out once.
TEST(MultiBroker, AnElasticGangStaysBetweenItsMinAndMaxUnderRacingBrokers) {
  RedisServer redis;
  BrokerProcess a{redis.url()};
  BrokerProcess b{redis.url()};
  const std::string q = "race-el";
  const auto host = [](int n) {
    json caps = example_worker("4xa100-pcie");
    caps["labels"]["rendezvous.ojs.io/address"] = "10.0.1." + std::to_string(n);
    return json{{"capabilities", caps}};
  };
  const auto id = Api{a.url()}.push(ml_job(q, {{"ext_ml_gpu_count", 4}, {"ext_ml_gang", {{"min_size", 2}, {"max_size", 4}}}}));

  std::mutex mutex;
  std::set<std::string> members;  // workers the job was delivered to
  std::vector<std::thread> workers;
  for (int w = 0; w < 8; ++w) {
    workers.emplace_back([&, w] {
      for (int round = 0; round < 15; ++round) {
        Api api{(w + round) % 2 == 0 ? a.url() : b.url()};
        for (const auto& j : api.fetch({q}, "w" + std::to_string(w), 1, host(w))) {
          EXPECT_EQ(j["id"], id);
          EXPECT_LE(j["ext_ml_gang_world_size"].get<int>(), 4);
          std::lock_guard lock(mutex);
          members.insert("w" + std::to_string(w));
        }
      }
    });
  }
  for (auto& t : workers) t.join();
  ASSERT_EQ(members.size(), 4u) << "never more members than max_size";
  Api api{a.url()};
  EXPECT_EQ(api.get("/ojs/v1/admin/queues/" + q + "/budget").body["budget"]["in_use"]["gpus"], 16);
  const auto facts = [&](const std::string& worker) {
    const auto beat = api.post("/ojs/v1/workers/heartbeat", {{"worker_id", worker}, {"active_jobs", {id}}}).body;
    for (const auto& g : beat["gangs"])
      if (g["job_id"] == id) return g;
    return json(nullptr);
  };
  std::vector<std::string> by_rank(4);
  for (const auto& w : members) by_rank.at(facts(w)["ext_ml_gang_rank"].get<int>()) = w;

  // The leave commit, raced for the three members besides rank 0: two may go (4 - 2).
  std::string fn;
  for (const auto& line : redis_lines(redis, {"FUNCTION", "LIST"}))
    if (line.rfind("gang_leave_", 0) == 0) fn = line;
  ASSERT_FALSE(fn.empty());
  const std::string job_key = "ojs:{" + q + "}:job:" + id;
  std::atomic<int> marked{0};
  std::vector<std::thread> leavers;
  for (int r = 1; r < 4; ++r)
    leavers.emplace_back([&, r] {
      const auto out = redis_lines(redis, {"FCALL", fn, "3", job_key, "ojs:{" + q + "}:preempting", "ojs:{" + q + "}:events",
                                           "preemptor", by_rank[r], "30", "0"});
      if (!out.empty() && out[0] == "ok") ++marked;
    });
  for (auto& t : leavers) t.join();
  EXPECT_EQ(marked.load(), 2) << "the gang would have gone below its min_size";

  // The leavers release their places through both brokers at once, twice each.
  std::vector<std::string> told;
  for (const auto& w : members)
    if (!api.post("/ojs/v1/workers/heartbeat", {{"worker_id", w}, {"active_jobs", {id}}}).body["job_directives"].empty())
      told.push_back(w);
  ASSERT_EQ(told.size(), 2u);
  std::vector<std::thread> releases;
  for (const auto& w : told)
    for (const auto& url : {a.url(), b.url()})
      releases.emplace_back([&, w, url] {
        Api client{url};
        client.post("/ojs/v1/workers/nack", {{"job_id", id}, {"worker_id", w}, {"requeue", true},
                                             {"error", {{"code", "preempted"}, {"message", "leaving"}}}});
      });
  for (auto& t : releases) t.join();
  EXPECT_EQ(facts(by_rank[0])["ext_ml_gang_world_size"], 2);
  EXPECT_EQ(api.get("/ojs/v1/jobs/" + id).body["job"]["state"], "active");
  EXPECT_EQ(api.get("/ojs/v1/admin/queues/" + q + "/budget").body["budget"]["in_use"]["gpus"], 8);
}
