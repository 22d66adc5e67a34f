// When will a waiting job start (GET /jobs/{id}/diagnosis `estimate`),
// what would make it start (POST /jobs/{id}/what-if) and the queue's next
// placements (GET /queues/{name}/forecast), end to end: a real redis-server and
// broker, workers simulated by HTTP FETCH with capabilities. The estimate is a
// computation over the declared ends of what runs, so the tests compare its start
// with the running jobs' started_at plus what they declared (never with wall time).
#include <gtest/gtest.h>

#include <functional>

#include "ojs/core/time.hpp"
#include "support/eventually.hpp"
#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"
#include "support/role_tokens.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

json a100_worker(int gpus) {
  return {{"capabilities", {{"accelerator", "gpu"}, {"gpu", {{"type", "nvidia-a100"}, {"count", gpus}, {"memory_gb", 80}}}}}};
}

json gpu_job(const std::string& queue, int gpus, std::optional<int> estimate_s, json extra = json::object()) {
  json attrs = {{"ext_ml_gpu_count", gpus}, {"ext_ml_gpu_type", "nvidia-a100"}};
  if (estimate_s) attrs["ext_ml_estimated_duration_seconds"] = *estimate_s;
  for (auto it = extra.begin(); it != extra.end(); ++it) attrs[it.key()] = it.value();
  return ml_job(queue, attrs);
}

std::int64_t ms_of(const json& rfc3339) { return ojs::parse_rfc3339(rfc3339.get<std::string>()).value_or(0); }

}  // namespace

class EstimateOn : public ::testing::Test {
 protected:
  // before_start: what Redis holds before the broker starts.
  explicit EstimateOn(std::vector<std::string> broker_args = {}, const std::function<void(RedisServer&)>& before_start = {})
      : broker((before_start ? before_start(redis) : void(), redis.url()), std::move(broker_args)), api(broker.url()) {}
  RedisServer redis;
  BrokerProcess broker;
  Api api;

  // A worker polls the queue (and registers with its capabilities); the ids it got.
  std::vector<std::string> fetch(const std::string& queue, const std::string& worker, const json& caps, int count = 1) {
    std::vector<std::string> ids;
    for (const auto& j : api.fetch({queue}, worker, count, caps)) ids.push_back(j["id"].get<std::string>());
    return ids;
  }
  json job(const std::string& id) { return api.get("/ojs/v1/jobs/" + id).body["job"]; }
  std::int64_t started_ms(const std::string& id) { return ms_of(job(id)["started_at"]); }
  json estimate(const std::string& id) {
    auto r = api.get("/ojs/v1/jobs/" + id + "/diagnosis");
    EXPECT_EQ(r.status, 200) << r.body.dump();
    return r.body["diagnosis"]["estimate"];
  }
  json what_if(const std::string& id, const json& body) { return api.post("/ojs/v1/jobs/" + id + "/what-if", body).body; }
  // A spot job (declared 10 h, `grace_s` to leave) running on w1 (1 GPU), then a
  // reserved 1-GPU job pushed behind it: {spot, reserved}.
  std::pair<std::string, std::string> reserved_behind_spot(const std::string& q, int grace_s) {
    const auto spot = api.push(gpu_job(q, 1, 36000, {{"ext_ml_priority_class", "spot"}, {"ext_ml_preemption_grace_period_s", grace_s}}));
    EXPECT_EQ(fetch(q, "w1", a100_worker(1)).size(), 1u);
    return {spot, api.push(gpu_job(q, 1, 60, {{"ext_ml_priority_class", "reserved"}}))};
  }
  void put_config(const std::string& queue, const json& body) {
    auto r = api.call("PUT", "/ojs/v1/admin/queues/" + queue + "/config", body);
    ASSERT_EQ(r.status, 200) << r.body.dump();
  }
};

class Estimate : public EstimateOn {};

TEST_F(Estimate, BehindTwoRunningJobsWithDeclaredDurations) {
  const std::string q = "est-two";
  const json w = a100_worker(2);
  const auto a = api.push(gpu_job(q, 1, 600));
  const auto b = api.push(gpu_job(q, 1, 1200));
  ASSERT_EQ(fetch(q, "w1", w, 2).size(), 2u);
  const auto big = api.push(gpu_job(q, 2, 60));

  const json e = estimate(big);
  ASSERT_EQ(e["status"], "estimated") << e.dump();
  // Both GPUs are free once the longer of the two has run its declared 1200 s.
  EXPECT_NEAR(static_cast<double>(ms_of(e["start_at"])), static_cast<double>(started_ms(b) + 1200000), 1000.0) << e.dump();
  EXPECT_EQ(e["position"], 1);
  EXPECT_EQ(e["jobs_ahead"], 0);
  EXPECT_EQ(e["running_ends"]["declared"], 2) << e.dump();
  EXPECT_EQ(e["worker_ids"], json({"w1"}));
  EXPECT_NE(e["rests_on"].get<std::string>().find("2 running jobs' declared ends"), std::string::npos) << e.dump();
  // `ojsctl why` prints it in one line.
  const auto why = run_process({binary_path("ojsctl/ojsctl"), "--url", broker.url(), "why", big}, 30);
  EXPECT_EQ(why.exit_code, 0) << why.output;
  EXPECT_NE(why.output.find("Estimate:     starts " + e["start_at"].get<std::string>()), std::string::npos) << why.output;

  // A 1-GPU job pushed after it waits for the first end (600 s): it is second in the
  // queue, but the big job cannot use one GPU and does not hold it.
  const auto small = api.push(gpu_job(q, 1, 60));
  (void)a;
  const json s = estimate(small);
  ASSERT_EQ(s["status"], "estimated") << s.dump();
  EXPECT_EQ(s["position"], 2);
  EXPECT_EQ(s["jobs_ahead"], 1);
  EXPECT_NEAR(static_cast<double>(ms_of(s["start_at"])), static_cast<double>(started_ms(a) + 600000), 1000.0) << s.dump();
}

// A running job that reported progress 0.5 after X ms of its attempt is expected to
// end X ms later, not at its declared end (an hour): the job behind it starts then.
TEST_F(Estimate, BehindARunningJobThatReportedProgress) {
  const std::string q = "est-progress";
  const auto a = api.push(gpu_job(q, 1, 3600));
  ASSERT_EQ(fetch(q, "w1", a100_worker(1)).size(), 1u);
  const auto next = api.push(gpu_job(q, 1, 60));
  const json declared = estimate(next);
  EXPECT_EQ(declared["running_ends"]["declared"], 1) << declared.dump();

  auto r = api.call("PUT", "/ojs/v1/jobs/" + a + "/progress", {{"worker_id", "w1"}, {"progress", 0.5}});
  ASSERT_EQ(r.status, 200) << r.body.dump();
  const auto progress = api.get("/ojs/v1/jobs/" + a + "/progress").body;
  const std::int64_t started = started_ms(a), reported = ms_of(progress["updated_at"]);
  const json e = estimate(next);
  ASSERT_EQ(e["status"], "estimated") << e.dump();
  EXPECT_NEAR(static_cast<double>(ms_of(e["start_at"])), static_cast<double>(started + 2 * (reported - started)), 1000.0)
      << e.dump() << progress.dump();
  EXPECT_LT(ms_of(e["start_at"]), started + 3600000 / 2) << e.dump();
  EXPECT_EQ(e["running_ends"]["progress"], 1) << e.dump();
  EXPECT_EQ(e["running_ends"]["declared"], 0) << e.dump();
  EXPECT_NE(e["rests_on"].get<std::string>().find("1 running job's reported progress"), std::string::npos) << e.dump();
}

// A job resumed from its checkpoint reports its progress through the whole run (a
// training loop's step): its first report after the resume, 0.6, says nothing of when
// it ends (counted from the attempt's start it would say "now"), so its declared end
// stands; once it has moved on from there (0.7), its pace since that first report says.
TEST_F(Estimate, BehindAJobResumedFromItsCheckpoint) {
  const std::string q = "est-resumed";
  const auto a = api.push(gpu_job(q, 1, 3600));
  ASSERT_EQ(fetch(q, "w1", a100_worker(1)).size(), 1u);
  const auto report = [&](double progress) {
    auto r = api.call("PUT", "/ojs/v1/jobs/" + a + "/progress", {{"worker_id", "w1"}, {"progress", progress}});
    ASSERT_EQ(r.status, 200) << r.body.dump();
  };
  report(0.3);
  auto r = api.post("/ojs/v1/jobs/" + a + "/checkpoint", {{"step", 300}, {"storage_key", "s3://ckpt/a/300/"}, {"worker_id", "w1"}});
  ASSERT_EQ(r.status, 200) << r.body.dump();
  r = api.post("/ojs/v1/workers/nack", {{"job_id", a}, {"worker_id", "w1"}, {"requeue", true},
                                        {"error", {{"code", "preempted"}, {"message", "stopped"}}}});
  ASSERT_EQ(r.status, 200) << r.body.dump();
  ASSERT_EQ(fetch(q, "w1", a100_worker(1)), std::vector<std::string>{a});
  // The checkpoint and the new attempt's start may fall in one millisecond (a fast
  // machine): it is still the previous attempt's. Made so here, not left to chance.
  redis_lines(redis, {"HSET", "ojs:{" + q + "}:job:" + a, "last_checkpoint_at", std::to_string(started_ms(a))});
  const auto next = api.push(gpu_job(q, 1, 60));

  report(0.6);
  json e = estimate(next);
  ASSERT_EQ(e["status"], "estimated") << e.dump();
  EXPECT_EQ(e["running_ends"]["declared"], 1) << e.dump();
  EXPECT_EQ(e["running_ends"]["progress"], 0) << e.dump();
  EXPECT_GT(ms_of(e["start_at"]), started_ms(a) + 3000000) << e.dump();

  report(0.7);
  e = estimate(next);
  ASSERT_EQ(e["status"], "estimated") << e.dump();
  EXPECT_EQ(e["running_ends"]["progress"], 1) << e.dump();
  // 0.1 since the first report: the 0.3 left takes three times as long as that did.
  const std::int64_t reported = ms_of(api.get("/ojs/v1/jobs/" + a + "/progress").body["updated_at"]);
  EXPECT_LE(ms_of(e["start_at"]), reported + 3 * (reported - started_ms(a)) + 1000) << e.dump();
}

// Under policy fair the run takes the jobs as the claim does: team-a has
// used the queue and holds its one GPU, team-b has used nothing, so team-b's job,
// pushed after team-a's, starts first when the running job ends (the score order,
// team-a's slot before team-b's, said the opposite).
TEST_F(Estimate, UnderTheFairPolicyTheTenantBelowItsShareStartsFirst) {
  const std::string q = "est-fair";
  put_config(q, {{"policy", "fair"}, {"tenant_fairness", {{"weights", {{"team-a", 1}, {"team-b", 1}}}}}});
  const auto of = [&](const std::string& tenant, std::optional<int> declared_s) {
    return gpu_job(q, 1, declared_s, {{"meta", {{"tenant_id", tenant}}}});
  };
  const auto used = api.push(of("team-a", std::nullopt));  // declares nothing: its run teaches no overrun
  ASSERT_EQ(fetch(q, "w1", a100_worker(1)), std::vector<std::string>{used});
  ASSERT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", used}, {"worker_id", "w1"}}).status, 200);
  const auto running = api.push(of("team-a", 600));
  ASSERT_EQ(fetch(q, "w1", a100_worker(1)), std::vector<std::string>{running});
  const auto a = api.push(of("team-a", 60));
  const auto b = api.push(of("team-b", 60));

  const json eb = estimate(b), ea = estimate(a);
  ASSERT_EQ(eb["status"], "estimated") << eb.dump();
  ASSERT_EQ(ea["status"], "estimated") << ea.dump();
  EXPECT_NEAR(static_cast<double>(ms_of(eb["start_at"])), static_cast<double>(started_ms(running) + 600000), 1000.0) << eb.dump();
  EXPECT_NEAR(static_cast<double>(ms_of(ea["start_at"])), static_cast<double>(started_ms(running) + 660000), 1000.0) << ea.dump();
}

TEST_F(Estimate, BehindTheQueueBudget) {
  const std::string q = "est-budget";
  put_config(q, {{"budgets", {{"max_total_gpus", 2}}}});
  const json w = a100_worker(8);
  const auto running = api.push(gpu_job(q, 2, 900));
  ASSERT_EQ(fetch(q, "w1", w).size(), 1u);
  const auto waiting = api.push(gpu_job(q, 2, 60));

  const json e = estimate(waiting);
  ASSERT_EQ(e["status"], "estimated") << e.dump();
  // The worker has 6 free GPUs: only the budget (2 GPUs, held by the running job) keeps it.
  EXPECT_NEAR(static_cast<double>(ms_of(e["start_at"])), static_cast<double>(started_ms(running) + 900000), 1000.0) << e.dump();
  EXPECT_NE(e["rests_on"].get<std::string>().find("max_total_gpus"), std::string::npos) << e.dump();

  // What-if: 2 GPUs more budget places it now on w1.
  const json more = what_if(waiting, {{"changes", {{{"kind", "budget"}, {"gpus", 2}}}}});
  ASSERT_TRUE(more.contains("what_if")) << more.dump();
  EXPECT_EQ(more["what_if"]["placed_now"], true) << more.dump();
  EXPECT_EQ(more["what_if"]["worker_ids"], json({"w1"}));
  EXPECT_EQ(more["what_if"]["helps"], true);
  // Ending the running job now helps too; nothing was written.
  const json ended = what_if(waiting, {{"changes", {{{"kind", "end_job"}, {"job_id", running}}}}});
  EXPECT_EQ(ended["what_if"]["placed_now"], true) << ended.dump();
  EXPECT_EQ(job(running)["state"], "active");
  EXPECT_EQ(job(waiting)["state"], "available");
  // A hypothetical worker does not help: the budget, not the fleet, keeps it.
  const json worker = what_if(waiting, {{"changes", {{{"kind", "worker"}, {"worker_id", "new-node"}, {"capabilities", a100_worker(8)["capabilities"]}}}}});
  EXPECT_EQ(worker["what_if"]["helps"], false) << worker.dump();
  EXPECT_NE(worker["what_if"]["why_not"].get<std::string>().find("max_total_gpus"), std::string::npos) << worker.dump();
}

TEST_F(Estimate, BehindAGangAheadInTheQueue) {
  const std::string q = "est-gang";
  const json w = a100_worker(1);
  ASSERT_TRUE(fetch(q, "w1", w).empty());  // both workers known, idle
  ASSERT_TRUE(fetch(q, "w2", w).empty());
  const auto running = api.push(gpu_job(q, 1, 300));
  ASSERT_EQ(fetch(q, "w1", w).size(), 1u);
  // A gang of two 1-GPU members declared to run 600 s, then a 1-GPU job.
  const auto gang = api.push(gpu_job(q, 1, 600, {{"ext_ml_gang", {{"size", 2}}}}));
  const auto after = api.push(gpu_job(q, 1, 60));

  const json g = estimate(gang);
  ASSERT_EQ(g["status"], "estimated") << g.dump();
  EXPECT_NEAR(static_cast<double>(ms_of(g["start_at"])), static_cast<double>(started_ms(running) + 300000), 1000.0) << g.dump();
  EXPECT_EQ(g["worker_ids"].size(), 2u) << g.dump();

  // The forming gang holds the free worker: the job behind it starts when the gang ends.
  const json e = estimate(after);
  ASSERT_EQ(e["status"], "estimated") << e.dump();
  EXPECT_EQ(e["jobs_ahead"], 1);
  EXPECT_NEAR(static_cast<double>(ms_of(e["start_at"])), static_cast<double>(started_ms(running) + 900000), 1000.0) << e.dump();

  // The queue's forecast lists both, in order.
  const auto f = api.get("/ojs/v1/queues/" + q + "/forecast?limit=5");
  ASSERT_EQ(f.status, 200) << f.body.dump();
  const auto& placements = f.body["forecast"]["placements"];
  ASSERT_EQ(placements.size(), 2u) << f.body.dump();
  EXPECT_EQ(placements[0]["job_id"], gang);
  EXPECT_EQ(placements[1]["job_id"], after);
  EXPECT_EQ(placements[1]["start_at"], e["start_at"]);
}

TEST_F(Estimate, UnresolvableWhenNoWorkerOfTheFleetFits) {
  const std::string q = "est-never";
  ASSERT_TRUE(fetch(q, "w1", a100_worker(2)).empty());
  const auto id = api.push(gpu_job(q, 4, 60));
  const json e = estimate(id);
  EXPECT_EQ(e["status"], "unresolvable") << e.dump();
  EXPECT_NE(e["reason"].get<std::string>().find("no live worker"), std::string::npos) << e.dump();
  EXPECT_FALSE(e.contains("start_at"));

  // What-if a worker with 4 GPUs joined: placed now, on it.
  const json wi = what_if(id, {{"changes", {{{"kind", "worker"}, {"worker_id", "big"}, {"capabilities", a100_worker(4)["capabilities"]}}}}});
  ASSERT_TRUE(wi.contains("what_if")) << wi.dump();
  EXPECT_EQ(wi["what_if"]["placed_now"], true) << wi.dump();
  EXPECT_EQ(wi["what_if"]["worker_ids"], json({"big"}));
  EXPECT_EQ(wi["what_if"]["before"]["status"], "unresolvable");
}

TEST_F(Estimate, WhatIfRaisedPriorityClassGoesAhead) {
  const std::string q = "est-prio";
  const json w = a100_worker(1);
  const auto running = api.push(gpu_job(q, 1, 300));
  ASSERT_EQ(fetch(q, "w1", w).size(), 1u);
  const auto first = api.push(gpu_job(q, 1, 600, {{"ext_ml_priority_class", "spot"}}));
  const auto second = api.push(gpu_job(q, 1, 60, {{"ext_ml_priority_class", "spot"}}));
  const json before = estimate(second);
  ASSERT_EQ(before["status"], "estimated") << before.dump();
  EXPECT_NEAR(static_cast<double>(ms_of(before["start_at"])), static_cast<double>(started_ms(running) + 900000), 1000.0);

  const json wi = what_if(second, {{"changes", {{{"kind", "priority_class"}, {"priority_class", "on-demand"}}}}});
  ASSERT_TRUE(wi.contains("what_if")) << wi.dump();
  EXPECT_EQ(wi["what_if"]["helps"], true) << wi.dump();
  EXPECT_NEAR(static_cast<double>(ms_of(wi["what_if"]["after"]["start_at"])), static_cast<double>(started_ms(running) + 300000), 1000.0)
      << wi.dump();
  EXPECT_EQ(wi["what_if"]["after"]["jobs_ahead"], 0);
  (void)first;
}

// Under policy fair the priority class comes first too: a raised class goes ahead of
// an older job of the lower class, whatever the tenants' shares.
TEST_F(Estimate, WhatIfRaisedPriorityClassGoesAheadUnderTheFairPolicy) {
  const std::string q = "est-fair";
  ASSERT_EQ(api.call("PUT", "/ojs/v1/admin/queues/" + q + "/config", {{"policy", "fair"}}).status, 200);
  const json w = a100_worker(1);
  const auto running = api.push(gpu_job(q, 1, 300));
  ASSERT_EQ(fetch(q, "w1", w).size(), 1u);
  const auto first = api.push(gpu_job(q, 1, 600, {{"ext_ml_priority_class", "spot"}}));
  const auto second = api.push(gpu_job(q, 1, 60, {{"ext_ml_priority_class", "spot"}}));
  const json wi = what_if(second, {{"changes", {{{"kind", "priority_class"}, {"priority_class", "on-demand"}}}}});
  ASSERT_TRUE(wi.contains("what_if")) << wi.dump();
  EXPECT_EQ(wi["what_if"]["helps"], true) << wi.dump();
  EXPECT_NEAR(static_cast<double>(ms_of(wi["what_if"]["after"]["start_at"])), static_cast<double>(started_ms(running) + 300000), 1000.0)
      << wi.dump();
  (void)first;
}

TEST_F(Estimate, WhatIfBodyErrorsNameTheField) {
  const std::string q = "est-bad";
  const auto id = api.push(gpu_job(q, 1, 60));
  auto r = api.post("/ojs/v1/jobs/" + id + "/what-if", {{"changes", json::array()}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body["error"]["details"]["field"], "changes") << r.body.dump();
  r = api.post("/ojs/v1/jobs/" + id + "/what-if", {{"changes", {{{"kind", "budget"}, {"gpus", 0}}}}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body["error"]["details"]["field"], "changes[0].gpus") << r.body.dump();
  r = api.post("/ojs/v1/jobs/" + id + "/what-if", {{"changes", {{{"kind", "teleport"}}}}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body["error"]["details"]["field"], "changes[0].kind") << r.body.dump();
  r = api.post("/ojs/v1/jobs/" + id + "/what-if", {{"changes", {{{"kind", "worker"}, {"capabilities", {{"gpu", {{"count", -1}}}}}}}}});
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body["error"]["details"]["field"].get<std::string>().find("changes[0].capabilities"), std::string::npos) << r.body.dump();
  r = api.post("/ojs/v1/jobs/" + id + "/what-if", {{"changes", {{{"kind", "end_job"}, {"job_id", "nope"}}}}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body["error"]["details"]["field"], "changes[0].job_id") << r.body.dump();
  EXPECT_EQ(api.get("/ojs/v1/queues/" + q + "/forecast?limit=0").status, 400);
}

// A tenant-pinned producer asks only about its own jobs: another tenant's job is 404,
// and the queue forecast lists its own placements only.
class EstimateTenants : public ::testing::Test, public RoleTokenBroker {
 protected:
  EstimateTenants() : RoleTokenBroker("estimate-tenants") {}
};

TEST_F(EstimateTenants, ATenantAsksAboutItsOwnJobsOnly) {
  const std::string q = "est-tenants";
  ASSERT_TRUE(pool.fetch({q}, "pool-1", 1, a100_worker(1)).empty());
  const auto mine = team_a.push(gpu_job(q, 1, 60));
  const auto theirs = team_b.push(gpu_job(q, 1, 60));
  EXPECT_EQ(team_a.get("/ojs/v1/jobs/" + mine + "/diagnosis").body["diagnosis"]["estimate"]["status"], "estimated");
  EXPECT_EQ(team_a.get("/ojs/v1/jobs/" + theirs + "/diagnosis").status, 404);
  const json change = {{"changes", {{{"kind", "budget"}, {"gpus", 1}}}}};
  EXPECT_EQ(team_a.post("/ojs/v1/jobs/" + theirs + "/what-if", change).status, 404);
  EXPECT_EQ(team_a.post("/ojs/v1/jobs/" + mine + "/what-if", change).status, 200);
  const auto f = team_a.get("/ojs/v1/queues/" + q + "/forecast");
  ASSERT_EQ(f.status, 200) << f.body.dump();
  ASSERT_EQ(f.body["forecast"]["placements"].size(), 1u) << f.body.dump();
  EXPECT_EQ(f.body["forecast"]["placements"][0]["job_id"], mine);
  EXPECT_EQ(admin.get("/ojs/v1/queues/" + q + "/forecast").body["forecast"]["placements"].size(), 2u);
}

// A running job that declares no end ends at its type's learned median: the run
// times of each type are kept per queue (ojs:{q}:run-times:<type>), settled from
// the ACKs' entries (settle.lua) before the estimate reads them.
TEST_F(Estimate, LearnedMedianForARunningJobWithoutADeclaredEnd) {
  const std::string q = "est-median";
  const json w = a100_worker(1);
  const auto done = api.push(gpu_job(q, 1, std::nullopt));
  ASSERT_EQ(fetch(q, "w1", w).size(), 1u);
  ASSERT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", done}, {"worker_id", "w1"}}).status, 200);
  const auto running = api.push(gpu_job(q, 1, std::nullopt));
  ASSERT_EQ(fetch(q, "w1", w).size(), 1u);
  const auto waiting = api.push(gpu_job(q, 1, 60));
  const json e = estimate(waiting);
  ASSERT_EQ(e["status"], "estimated") << e.dump();
  EXPECT_EQ(e["running_ends"]["median"], 1) << e.dump();
  EXPECT_NE(e["rests_on"].get<std::string>().find("learned run time"), std::string::npos) << e.dump();
  EXPECT_EQ(redis_lines(redis, {"LLEN", "ojs:{" + q + "}:run-times:ml.task"}), std::vector<std::string>{"1"});
  (void)running;
}

// start_at_p90: the same run with the learned run times at their 90th percentile. Ten
// run times of the type, 100 s .. 1000 s: the running job that declares no end is
// expected to end 600 s after its start (the upper median), late 1000 s after it.
TEST_F(Estimate, StartAtP90FromTheSpreadOfTheLearnedRunTimes) {
  const std::string q = "est-p90";
  std::vector<std::string> push = {"LPUSH", "ojs:{" + q + "}:run-times:ml.task"};
  for (int s = 100; s <= 1000; s += 100) push.push_back(std::to_string(s * 1000));
  redis_lines(redis, push);
  const auto running = api.push(gpu_job(q, 1, std::nullopt));
  ASSERT_EQ(fetch(q, "w1", a100_worker(1)).size(), 1u);
  const auto waiting = api.push(gpu_job(q, 1, 60));
  const json e = estimate(waiting);
  ASSERT_EQ(e["status"], "estimated") << e.dump();
  const auto started = static_cast<double>(started_ms(running));
  EXPECT_NEAR(static_cast<double>(ms_of(e["start_at"])), started + 600000, 1000.0) << e.dump();
  EXPECT_NEAR(static_cast<double>(ms_of(e["start_at_p90"])), started + 1000000, 1000.0) << e.dump();
  // The forecast and a what-if answer the same pair.
  const auto f = api.get("/ojs/v1/queues/" + q + "/forecast").body["forecast"]["placements"];
  ASSERT_EQ(f.size(), 1u) << f.dump();
  EXPECT_EQ(f[0]["start_at_p90"], e["start_at_p90"]) << f.dump();
  const auto w = what_if(waiting, {{"changes", {{{"kind", "budget"}, {"gpus", 1}}}}});
  EXPECT_EQ(w["what_if"]["after"]["start_at_p90"], e["start_at_p90"]) << w.dump();
}

// start_at_p90 is calibrated by how the queue's jobs started against theirs: the
// first estimate answered for a waiting job is kept on it, and once 20 completed jobs
// told a late start a minute or more away started 3x as late, the late start answered
// is 3x as far.
TEST_F(Estimate, StartAtP90LearnsHowLateTheQueuesJobsStartedAgainstTheirs) {
  const std::string q = "est-calibrated";
  const json w = a100_worker(1);
  for (int i = 0; i < 20; ++i) {
    const auto id = api.push(gpu_job(q, 1, std::nullopt));
    ASSERT_EQ(fetch(q, "w1", w).size(), 1u);
    ASSERT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "w1"}}).status, 200);
    // As if it had been told, 300 s before it started, that it would start by 100 s later than asked.
    const auto started = started_ms(id);
    redis_lines(redis, {"HSET", "ojs:{" + q + "}:job:" + id, "estimate_asked_at", std::to_string(started - 300000),
                        "estimate_late_at", std::to_string(started - 200000)});
  }
  const auto running = api.push(gpu_job(q, 1, 600));
  ASSERT_EQ(fetch(q, "w1", w).size(), 1u);
  const auto waiting = api.push(gpu_job(q, 1, 60));
  const auto asked = ojs::now_ms();
  const json e = estimate(waiting);
  ASSERT_EQ(e["status"], "estimated") << e.dump();
  const auto run_late = started_ms(running) + 600000;  // no spread learned: the run's late start is its start
  EXPECT_NEAR(static_cast<double>(ms_of(e["start_at"])), static_cast<double>(run_late), 1000.0) << e.dump();
  EXPECT_NEAR(static_cast<double>(ms_of(e["start_at_p90"])), static_cast<double>(asked + (run_late - asked) * 3), 3000.0) << e.dump();
  // The run's late start (not the widened one) is kept on the job, once: a second diagnosis keeps the first.
  const auto key = "ojs:{" + q + "}:job:" + waiting;
  const auto kept = redis_lines(redis, {"HMGET", key, "estimate_asked_at", "estimate_late_at"});
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_NEAR(std::stod(kept[1]), static_cast<double>(run_late), 1000.0);
  estimate(waiting);
  EXPECT_EQ(redis_lines(redis, {"HMGET", key, "estimate_asked_at", "estimate_late_at"}), kept);
}

// The run-time list expires a week after the settling (settle.lua) that last wrote
// it, so a deleted queue's lists do not stay: the list's creation sets the expiry
// and each later settling of the type's completions renews it.
TEST_F(Estimate, RunTimeListExpiryIsRenewedByEachSettlingThatWritesIt) {
  const std::string q = "est-ttl";
  const std::string list = "ojs:{" + q + "}:run-times:ml.task";
  const json w = a100_worker(1);
  const auto complete_one = [&] {
    const auto id = api.push(gpu_job(q, 1, std::nullopt));
    ASSERT_EQ(fetch(q, "w1", w).size(), 1u);
    ASSERT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "w1"}}).status, 200);
    ASSERT_EQ(api.get("/ojs/v1/queues/" + q + "/stats").status, 200);  // a read of the counts settles the queue
  };
  const auto pttl = [&] { return std::stoll(redis_lines(redis, {"PTTL", list}).at(0)); };
  complete_one();
  EXPECT_GT(pttl(), 604800000 - 60000);  // a week, set by the settling that created the list
  EXPECT_LE(pttl(), 604800000);
  redis_lines(redis, {"PEXPIRE", list, "3600000"});  // as if the creation were days ago
  ASSERT_EQ(api.get("/ojs/v1/queues/" + q + "/stats").status, 200);
  EXPECT_LE(pttl(), 3600000) << "a settling with no completion of the type leaves the expiry as it was";
  complete_one();
  EXPECT_GT(pttl(), 604800000 - 60000);
  EXPECT_EQ(redis_lines(redis, {"LLEN", list}), std::vector<std::string>{"2"});
}

// A reserved job that fits no worker while a spot job holds it: the
// controller would preempt the spot job, so the estimate is the end of its grace
// period, not its declared end. Here another broker holds the controller's leader
// lease (and has not run its pass yet), so what the estimate shows is the run's own
// preemption.
class EstimateBeforeThePreemptionPass : public EstimateOn {
 protected:
  EstimateBeforeThePreemptionPass()
      : EstimateOn({}, [](RedisServer& r) { redis_lines(r, {"SET", "ojs:{_global}:preemption:leader", "another-broker", "PX", "600000"}); }) {}
};

TEST_F(EstimateBeforeThePreemptionPass, AReservedJobStartsOnceItsSpotVictimsGracePeriodEnds) {
  const std::string q = "est-preempt";
  const auto [spot, reserved] = reserved_behind_spot(q, 120);
  const auto behind = api.push(gpu_job(q, 1, 60, {{"ext_ml_priority_class", "spot"}}));

  const json e = estimate(reserved);
  const auto answered = ojs::now_ms();
  ASSERT_EQ(e["status"], "estimated") << e.dump();
  // 120 s (the victim's grace period) after the estimate was made: between the spot
  // job's start and the answer, and long before the spot job's declared 10 h end.
  const auto start = ms_of(e["start_at"]);
  EXPECT_GE(start, started_ms(spot) + 120000) << e.dump();
  EXPECT_LE(start, answered + 120000) << e.dump();
  EXPECT_EQ(e["preempts"], json::array({spot})) << e.dump();
  EXPECT_EQ(e["running_ends"]["preempted"], 1) << e.dump();
  EXPECT_EQ(e["worker_ids"], json({"w1"}));
  EXPECT_NE(e["rests_on"].get<std::string>().find("the preemption of 1 lower-class running job for it"), std::string::npos) << e.dump();
  // A spot job preempts nobody: it waits for the reserved job's 60 s after that.
  const json b = estimate(behind);
  ASSERT_EQ(b["status"], "estimated") << b.dump();
  EXPECT_GE(ms_of(b["start_at"]), start + 60000) << b.dump();
  EXPECT_FALSE(b.contains("preempts")) << b.dump();
  // The estimate wrote nothing: the spot job runs on, unmarked.
  EXPECT_EQ(job(spot)["state"], "active");
  EXPECT_FALSE(job(spot).contains("preempt_deadline")) << job(spot).dump();
}

// The controller has already preempted (every 100 ms): the estimate is the victim's deadline.
class EstimateAfterThePreemptionPass : public EstimateOn {
 protected:
  EstimateAfterThePreemptionPass() : EstimateOn({"--preemption-interval-ms", "100"}) {}
};

TEST_F(EstimateAfterThePreemptionPass, AReservedJobStartsAtItsVictimsDeadline) {
  const auto [spot, reserved] = reserved_behind_spot("est-preempted", 300);
  ASSERT_TRUE(eventually(10000, [&] { return job(spot).contains("preempt_deadline"); })) << job(spot).dump();
  const json e = estimate(reserved);
  ASSERT_EQ(e["status"], "estimated") << e.dump();
  EXPECT_EQ(ms_of(e["start_at"]), ms_of(job(spot)["preempt_deadline"])) << e.dump() << job(spot).dump();
  EXPECT_EQ(e["preempts"], json::array({spot})) << e.dump();
  EXPECT_EQ(e["running_ends"]["preempted"], 1) << e.dump();
}

// What-if a waiting spot job were reserved: it would preempt the running spot job and
// start once that job's grace period ends (the what-if runs the same preempting run).
TEST_F(EstimateBeforeThePreemptionPass, WhatIfReservedPreemptsTheRunningSpotJob) {
  const std::string q = "est-whatif-preempt";
  const auto running = api.push(gpu_job(q, 1, 36000, {{"ext_ml_priority_class", "spot"}, {"ext_ml_preemption_grace_period_s", 90}}));
  ASSERT_EQ(fetch(q, "w1", a100_worker(1)).size(), 1u);
  const auto waiting = api.push(gpu_job(q, 1, 60, {{"ext_ml_priority_class", "spot"}}));
  const json wi = what_if(waiting, {{"changes", {{{"kind", "priority_class"}, {"priority_class", "reserved"}}}}});
  const auto answered = ojs::now_ms();
  ASSERT_TRUE(wi.contains("what_if")) << wi.dump();
  EXPECT_EQ(ms_of(wi["what_if"]["before"]["start_at"]), started_ms(running) + 36000000) << wi.dump();  // spot: waits it out
  EXPECT_EQ(wi["what_if"]["helps"], true) << wi.dump();
  const auto after = ms_of(wi["what_if"]["after"]["start_at"]);
  EXPECT_GE(after, started_ms(running) + 90000) << wi.dump();
  EXPECT_LE(after, answered + 90000) << wi.dump();
  EXPECT_EQ(wi["what_if"]["after"]["preempts"], json::array({running})) << wi.dump();
  EXPECT_EQ(job(running)["state"], "active");
}
