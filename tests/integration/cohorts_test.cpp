// Cohorts end to end: queues sharing their idle GPU budget, the reclaim of lent
// GPUs by preemption with checkpoint, the lending limit, and several brokers on one
// Redis never letting a cohort hold more than its total. A real redis-server and
// brokers; workers simulated by HTTP calls with capabilities.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <chrono>
#include <set>
#include <thread>

#include "ojs/client/http_client.hpp"
#include "ojs/core/time.hpp"
#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;
using namespace std::chrono_literals;

namespace {

json dgx() { return {{"capabilities", example_worker("dgx-h100")}}; }  // 8 GPUs

json one_gpu_job(const std::string& queue) {
  return ml_job(queue, {{"ext_ml_gpu_count", 1},
                        {"ext_ml_preemption_grace_period_s", 2},
                        {"ext_ml_checkpoint_on_preempt", true},
                        {"ext_ml_checkpoint_enabled", true},
                        {"ext_ml_checkpoint_storage_uri", "s3://ckpt/cohort/"}});
}

void put_config(Api& api, const std::string& queue, const json& budgets) {
  const auto r = api.call("PUT", "/ojs/v1/admin/queues/" + queue + "/config", {{"budgets", budgets}});
  ASSERT_EQ(r.status, 200) << r.body.dump();
}

}  // namespace

class Cohorts : public ::testing::Test {
 protected:
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--preemption-interval-ms", "100"}};
  Api api{broker.url()};

  void SetUp() override {
    put_config(api, "coh-a", {{"max_total_gpus", 8}, {"cohort", "lab"}});
    put_config(api, "coh-b", {{"max_total_gpus", 8}, {"cohort", "lab"}});
  }
  json budget(const std::string& queue) { return api.get("/ojs/v1/admin/queues/" + queue + "/budget").body["budget"]; }
  // Fetches from `queue` with both workers until `want` jobs run there or 10 s pass.
  std::vector<std::string> fill(const std::string& queue, std::size_t want, std::vector<std::string> running = {}) {
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (running.size() < want && std::chrono::steady_clock::now() < until) {
      bool got = false;
      for (const char* worker : {"dgx-1", "dgx-2"})
        for (const auto& j : api.fetch({queue}, worker, 8, dgx())) {
          running.push_back(j["id"].get<std::string>());
          got = true;
        }
      if (!got) std::this_thread::sleep_for(100ms);
    }
    return running;
  }
};

TEST_F(Cohorts, AnIdleQueueLendsItsGpusAndGetsThemBackByCheckpointedPreemption) {
  for (int i = 0; i < 20; ++i) api.push(one_gpu_job("coh-b"));
  // b runs its nominal 8 at once, then the controller lends it a's idle 8.
  auto b_running = fill("coh-b", 16);
  ASSERT_EQ(b_running.size(), 16u);
  EXPECT_EQ(api.fetch({"coh-b"}, "dgx-1", 8, dgx()).size(), 0u) << "the cohort's 16 GPUs are all held";
  auto b = budget("coh-b");
  EXPECT_EQ(b["limits"]["max_total_gpus"], 8) << b.dump();
  EXPECT_EQ(b["cohort"]["name"], "lab");
  EXPECT_EQ(b["cohort"]["share_gpus"], 16);
  EXPECT_EQ(b["cohort"]["borrowed_gpus"], 8);
  EXPECT_EQ(budget("coh-a")["cohort"]["lent_gpus"], 8);
  {
    ojs::HttpClientOptions options;
    options.base_url = broker.url();
    ojs::HttpClient http(options);
    const auto metrics = http.get("/metrics").body;
    for (const char* line : {"ojs_queue_gpus{queue=\"coh-b\",cohort=\"lab\",kind=\"share\"} 16",
                             "ojs_queue_gpus{queue=\"coh-b\",cohort=\"lab\",kind=\"borrowed\"} 8",
                             "ojs_queue_gpus{queue=\"coh-a\",cohort=\"lab\",kind=\"lent\"} 8",
                             "ojs_queue_gpus{queue=\"coh-a\",cohort=\"lab\",kind=\"nominal\"} 8"})
      EXPECT_NE(metrics.find(line), std::string::npos) << line;
    const auto page = http.get("/ojs/status").body;
    EXPECT_NE(page.find("cohort lab: share 16, lent 0, borrowed 8"), std::string::npos);
    EXPECT_NE(page.find("cohort lab: share 0, lent 8, borrowed 0"), std::string::npos);
  }
  const auto shown = run_process({binary_path("ojsctl/ojsctl"), "--url", broker.url(), "queue", "budget", "coh-b"}, 60);
  EXPECT_NE(shown.output.find("Cohort:    lab: nominal 8, may hold 16 now (lent 0, borrowed 8)"), std::string::npos) << shown.output;
  int borrowing = 0;
  for (const auto& id : b_running) borrowing += api.get("/ojs/v1/jobs/" + id).body["job"].value("borrowed_gpus", 0);
  EXPECT_EQ(borrowing, 8) << "the jobs placed above b's nominal share are marked borrowing";

  // a's jobs arrive: b's borrowers get a preempt directive with their grace period.
  std::vector<std::string> a_jobs;
  for (int i = 0; i < 8; ++i) a_jobs.push_back(api.push(one_gpu_job("coh-a")));
  std::set<std::string> preempted;
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (preempted.size() < 8 && std::chrono::steady_clock::now() < until) {
    for (const char* worker : {"dgx-1", "dgx-2"}) {
      const auto beat = api.post("/ojs/v1/workers/heartbeat", {{"worker_id", worker}, {"active_jobs", b_running}});
      for (const auto& d : beat.body["job_directives"]) {
        EXPECT_EQ(d["action"], "preempt") << d.dump();
        EXPECT_EQ(d["checkpoint"], true);
        EXPECT_EQ(d["preempted_for"], "cohort:lab");
        preempted.insert(d["job_id"].get<std::string>());
      }
    }
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_EQ(preempted.size(), 8u) << "b holds 8 GPUs above its share";
  for (const auto& id : preempted)
    EXPECT_GT(api.get("/ojs/v1/jobs/" + id).body["job"].value("borrowed_gpus", 0), 0) << "a job within b's nominal share was chosen";
  // Until the borrowers leave, a gets nothing: the cohort would hold 24.
  for (const char* worker : {"dgx-1", "dgx-2"}) EXPECT_EQ(api.fetch({"coh-a"}, worker, 8, dgx()).size(), 0u);
  const auto why = api.get("/ojs/v1/jobs/" + a_jobs[0] + "/diagnosis").body["diagnosis"];
  EXPECT_EQ(why["cohort"]["reclaim_pending"]["gpus"], 8) << why.dump();
  // Its start estimate plans with a's nominal share (not the share it lent out) and
  // starts it as the borrowers' grace periods end.
  const auto& estimate = why["estimate"];
  ASSERT_EQ(estimate["status"], "estimated") << why.dump();
  const auto at = [](const json& t) { return ojs::parse_rfc3339(t.get<std::string>()).value_or(0); };
  EXPECT_LE(at(estimate["start_at"]), at(why["cohort"]["reclaim_pending"]["grace_ends_at"])) << why.dump();
  EXPECT_GE(estimate["running_ends"]["preempted"], 1) << why.dump();

  // Each borrower checkpoints and leaves; a then runs its 8, b keeps its own 8.
  for (const auto& id : preempted) {
    const auto holder = api.get("/ojs/v1/jobs/" + id).body["job"]["worker_id"].get<std::string>();
    ASSERT_EQ(api.post("/ojs/v1/jobs/" + id + "/checkpoint", {{"step", 10}, {"storage_key", "s3://ckpt/cohort/" + id}, {"worker_id", holder}}).status, 200);
    ASSERT_EQ(api.post("/ojs/v1/workers/nack", {{"job_id", id}, {"worker_id", holder}, {"requeue", true},
                                                {"error", {{"code", "preempted"}, {"message", "preempted"}}}})
                  .status,
              200);
  }
  const auto a_running = fill("coh-a", 8);
  EXPECT_EQ(a_running.size(), 8u);
  EXPECT_EQ(budget("coh-b")["in_use"]["gpus"], 8);
  EXPECT_EQ(budget("coh-a")["in_use"]["gpus"], 8);
  // A reclaimed job waits with its checkpoint and resumes from it later.
  const auto back = api.get("/ojs/v1/jobs/" + *preempted.begin()).body["job"];
  EXPECT_EQ(back["state"], "available");
  EXPECT_EQ(back["last_checkpoint"]["step"], 10);
  EXPECT_FALSE(back.contains("borrowed_gpus"));
}

TEST_F(Cohorts, TheLendingLimitBoundsWhatAnotherQueueBorrows) {
  put_config(api, "coh-a", {{"max_total_gpus", 8}, {"cohort", "lab"}, {"lending_limit", 4}});
  for (int i = 0; i < 20; ++i) api.push(one_gpu_job("coh-b"));
  auto running = fill("coh-b", 12);
  ASSERT_EQ(running.size(), 12u);
  std::this_thread::sleep_for(500ms);  // several controller passes: no more is lent
  EXPECT_EQ(api.fetch({"coh-b"}, "dgx-1", 8, dgx()).size(), 0u);
  EXPECT_EQ(budget("coh-b")["cohort"]["share_gpus"], 12);
}

// A gang of 2 x 8 GPUs in a queue of nominal 8 waits for 16 (the controller lends b
// a's idle 8 for it), and its member placed above the nominal share is borrowed: on
// the job and in the ledger, so that a reclaim finds it.
TEST_F(Cohorts, AGangPlacedByBorrowingIsMarkedBorrowing) {
  const auto gang = api.push(ml_job("coh-b", {{"ext_ml_gpu_count", 8}, {"ext_ml_gang", {{"size", 2}, {"timeout_seconds", 60}}},
                                              {"ext_ml_preemption_grace_period_s", 2}}));
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (api.get("/ojs/v1/jobs/" + gang).body["job"]["state"] != "active" && std::chrono::steady_clock::now() < until) {
    for (const char* worker : {"dgx-1", "dgx-2"}) api.fetch({"coh-b"}, worker, 1, dgx());
    std::this_thread::sleep_for(100ms);
  }
  const auto job = api.get("/ojs/v1/jobs/" + gang).body["job"];
  ASSERT_EQ(job["state"], "active") << job.dump();
  EXPECT_EQ(job.value("borrowed_gpus", 0), 8) << job.dump();
  EXPECT_EQ(budget("coh-b")["cohort"]["borrowed_gpus"], 8);
  EXPECT_EQ(redis_lines(redis, {"HGET", "ojs:{coh-b}:ledger", "borrowed_gpus"}), std::vector<std::string>{"8"});
}

TEST_F(Cohorts, ConfigRulesNameTheField) {
  auto r = api.call("PUT", "/ojs/v1/admin/queues/coh-c/config", {{"budgets", {{"cohort", "lab"}}}});
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.dump().find("budgets.max_total_gpus"), std::string::npos) << r.body.dump();
  r = api.call("PUT", "/ojs/v1/admin/queues/coh-c/config", {{"budgets", {{"max_total_gpus", 2}, {"borrowing_limit", 2}}}});
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.dump().find("budgets.borrowing_limit"), std::string::npos) << r.body.dump();
  r = api.call("PUT", "/ojs/v1/admin/queues/coh-c/config", {{"budgets", {{"max_total_gpus", 2}, {"cohort", "bad name!"}}}});
  EXPECT_EQ(r.status, 400) << r.body.dump();
  EXPECT_EQ(r.body["error"]["details"]["rule"], "must match ^[A-Za-z0-9._-]{1,64}$") << r.body.dump();
}

// Two brokers on one Redis, each with its own controller (one leads at a time),
// four workers with 32 GPUs between them racing on both queues while jobs end and
// arrive: the cohort never holds more than its 16 GPUs (read atomically from both
// ledgers), and no job is claimed twice.
TEST_F(Cohorts, SeveralBrokersNeverLetTheCohortExceedItsTotal) {
  BrokerProcess second{redis.url(), {"--preemption-interval-ms", "100"}};
  for (int i = 0; i < 60; ++i) api.push(one_gpu_job(i % 2 ? "coh-a" : "coh-b"));
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::set<std::string> claimed;
  bool twice = false;
  auto worker = [&](std::string url, const std::string& name, const std::string& queue) {
    Api via{url};  // a client per thread
    std::vector<std::string> mine;
    while (!stop) {
      for (const auto& j : via.fetch({queue}, name, 3, dgx())) {
        const auto id = j["id"].get<std::string>();
        mine.push_back(id);
        std::lock_guard lock(mu);
        if (!claimed.insert(id + "#" + std::to_string(j["attempt"].get<int>())).second) twice = true;
      }
      if (mine.size() > 6) {  // the oldest ends: room for the next
        EXPECT_EQ(via.post("/ojs/v1/workers/ack", {{"job_id", mine.front()}, {"worker_id", name}}).status, 200);
        mine.erase(mine.begin());
        via.push(one_gpu_job(queue));
      }
    }
  };
  long long most = 0;
  std::thread watch([&] {
    const std::string both = "return (tonumber(redis.call('HGET', KEYS[1], 'gpus')) or 0) + (tonumber(redis.call('HGET', KEYS[2], 'gpus')) or 0)";
    while (!stop) {
      const auto out = redis_lines(redis, {"EVAL", both, "2", "ojs:{coh-a}:ledger", "ojs:{coh-b}:ledger"});
      if (!out.empty()) most = std::max(most, std::stoll(out.back()));
    }
  });
  std::vector<std::thread> workers;
  workers.emplace_back(worker, broker.url(), "w1", "coh-a");
  workers.emplace_back(worker, second.url(), "w2", "coh-b");
  workers.emplace_back(worker, second.url(), "w3", "coh-a");
  workers.emplace_back(worker, broker.url(), "w4", "coh-b");
  std::this_thread::sleep_for(8s);
  stop = true;
  for (auto& t : workers) t.join();
  watch.join();
  EXPECT_FALSE(twice);
  EXPECT_LE(most, 16);
  EXPECT_GE(most, 12) << "the workers kept the cohort busy";
}

// Reclaim spares a borrowing job under its ext_ml_min_runtime_before_preempt_s
// while another borrower frees enough, though it has lost less work.
TEST_F(Cohorts, AJobUnderItsMinimumRunTimeIsNotTheVictimWhileAnotherIs) {
  for (int i = 0; i < 8; ++i) api.push(one_gpu_job("coh-b"));
  auto running = fill("coh-b", 8);
  ASSERT_EQ(running.size(), 8u);
  const auto plain = api.push(one_gpu_job("coh-b"));
  running = fill("coh-b", 9, running);  // borrowing, once the controller lends
  ASSERT_EQ(running.size(), 9u);
  std::this_thread::sleep_for(50ms);  // the plain borrower has run longer
  auto protected_job = one_gpu_job("coh-b");
  protected_job["ext_ml_min_runtime_before_preempt_s"] = 3600;
  const auto young = api.push(protected_job);
  running = fill("coh-b", 10, running);
  ASSERT_EQ(running.size(), 10u);
  EXPECT_GT(api.get("/ojs/v1/jobs/" + young).body["job"].value("borrowed_gpus", 0), 0);
  for (int i = 0; i < 7; ++i) api.push(one_gpu_job("coh-a"));  // a wants 7 of its 8: one GPU comes back from b
  std::set<std::string> preempted;
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (preempted.empty() && std::chrono::steady_clock::now() < until) {
    for (const char* worker : {"dgx-1", "dgx-2"}) {
      const auto beat = api.post("/ojs/v1/workers/heartbeat", {{"worker_id", worker}, {"active_jobs", running}});
      for (const auto& d : beat.body["job_directives"]) preempted.insert(d["job_id"].get<std::string>());
    }
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(preempted, std::set<std::string>{plain});
}
