// Preemption, checkpoints, escalation and reservations end to end: a real
// redis-server and broker; workers simulated by HTTP calls with capabilities.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;
using namespace std::chrono_literals;

namespace {

json caps_body(const std::string& name) { return {{"capabilities", example_worker(name)}}; }
json spot_job(const std::string& queue, int grace_s) {
  return ml_job(queue, {{"ext_ml_gpu_count", 1},
                     {"ext_ml_priority_class", "spot"},
                     {"ext_ml_preemption_grace_period_s", grace_s},
                     {"ext_ml_checkpoint_on_preempt", true},
                     {"ext_ml_checkpoint_enabled", true},
                     {"ext_ml_checkpoint_storage_uri", "s3://ckpt/run-1/"}});
}
json reserved_job(const std::string& queue) {
  return ml_job(queue, {{"ext_ml_gpu_count", 1}, {"ext_ml_priority_class", "reserved"}});
}

}  // namespace

class Preemption : public ::testing::Test {
 protected:
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--preemption-interval-ms", "100", "--capacity-hold-ms", "3000"}};
  Api api{broker.url()};

  json heartbeat(const std::string& worker, const std::vector<std::string>& active) {
    auto r = api.post("/ojs/v1/workers/heartbeat", {{"worker_id", worker}, {"active_jobs", active}});
    EXPECT_EQ(r.status, 200) << r.body.dump();
    return r.body;
  }
  // Heartbeats until a directive arrives (the controller runs every 100 ms).
  json wait_for_directive(const std::string& worker, const std::string& job_id) { return wait_for_directives(worker, {job_id}); }
  // Heartbeats of a worker running `active` until a beat carries directives: those.
  json wait_for_directives(const std::string& worker, const std::vector<std::string>& active) {
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < until) {
      auto beat = heartbeat(worker, active);
      if (!beat["job_directives"].empty()) return beat["job_directives"];
      std::this_thread::sleep_for(100ms);
    }
    return json::array();
  }
  json info(const std::string& id) { return api.get("/ojs/v1/jobs/" + id).body["job"]; }
};

TEST_F(Preemption, SpotJobGivesWayToReservedJobAndResumesFromItsCheckpoint) {
  const auto l4 = caps_body("l4-inference");  // the only capable worker: 1 GPU
  const auto spot = api.push(spot_job("pre-spot", 30));
  auto got = api.fetch({"pre-res", "pre-spot"}, "l4", 1, l4);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["id"], spot);
  EXPECT_EQ(got[0]["attempt"], 1);
  EXPECT_FALSE(got[0].contains("last_checkpoint"));

  const auto reserved = api.push(reserved_job("pre-res"));
  const auto directives = wait_for_directive("l4", spot);
  ASSERT_EQ(directives.size(), 1u) << "no preempt directive arrived";
  const auto& d = directives[0];
  EXPECT_EQ(d["job_id"], spot);
  EXPECT_EQ(d["action"], "preempt");
  EXPECT_GE(d["grace_period_s"].get<int>(), 28);
  EXPECT_LE(d["grace_period_s"].get<int>(), 30);
  EXPECT_EQ(d["checkpoint"], true);
  EXPECT_TRUE(d["deadline"].is_string());
  EXPECT_EQ(d["preempted_for"], reserved);
  // The FETCH reply carries it too, and the job is still active meanwhile.
  auto fetch_reply = api.post("/ojs/v1/workers/fetch", {{"queues", {"pre-spot"}}, {"worker_id", "l4"}, {"capabilities", l4["capabilities"]}});
  EXPECT_EQ(fetch_reply.body["job_directives"].size(), 1u) << fetch_reply.body.dump();
  EXPECT_EQ(info(spot)["state"], "active");

  // The worker commits a checkpoint, then releases the job.
  auto commit = api.post("/ojs/v1/jobs/" + spot + "/checkpoint",
                         {{"epoch", 2}, {"step", 1200}, {"loss", 0.25}, {"metrics", {{"accuracy", 0.91}}},
                          {"storage_key", "s3://ckpt/run-1/step-1200/"}, {"worker_id", "l4"}});
  ASSERT_EQ(commit.status, 200) << commit.body.dump();
  EXPECT_EQ(commit.body["last_checkpoint"]["step"], 1200);
  EXPECT_EQ(commit.body["last_checkpoint"]["job_id"], spot);
  auto nack = api.post("/ojs/v1/workers/nack", {{"job_id", spot}, {"worker_id", "l4"}, {"requeue", true},
                                                {"error", {{"code", "preempted"}, {"message", "preempted"}}}});
  ASSERT_EQ(nack.status, 200) << nack.body.dump();

  auto requeued = info(spot);
  EXPECT_EQ(requeued["state"], "available");
  EXPECT_EQ(requeued["attempt"], 0);  // the attempt was given back
  EXPECT_EQ(requeued["preemption_count"], 1);
  EXPECT_EQ(requeued["last_checkpoint"]["step"], 1200);
  EXPECT_FALSE(requeued.contains("preempt_deadline"));
  EXPECT_TRUE(heartbeat("l4", {})["job_directives"].empty());

  // The freed GPU is held for the reserved job: the spot job cannot take it back.
  EXPECT_EQ(api.fetch({"pre-spot"}, "l4", 1, l4).size(), 0u);
  auto why = api.get("/ojs/v1/jobs/" + spot + "/diagnosis").body["diagnosis"];
  EXPECT_TRUE(why["by_predicate"].contains("capacity_hold")) << why.dump();

  got = api.fetch({"pre-res", "pre-spot"}, "l4", 1, l4);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["id"], reserved);
  EXPECT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", reserved}, {"worker_id", "l4"}}).status, 200);

  // The spot job resumes with its checkpoint (step + 1 = 1201 onwards).
  got = api.fetch({"pre-res", "pre-spot"}, "l4", 1, l4);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["id"], spot);
  EXPECT_EQ(got[0]["attempt"], 1);
  EXPECT_EQ(got[0]["preemption_count"], 1);
  EXPECT_EQ(got[0]["last_checkpoint"]["step"], 1200);
  EXPECT_EQ(got[0]["last_checkpoint"]["storage_key"], "s3://ckpt/run-1/step-1200/");
}

// A reserved job that needs two free GPUs of a 4-GPU worker and the two a spot job
// holds: during the spot job's grace period the free two are held for it as well, or
// a lower-class job takes them and the reserved job, once its victim has left, still
// does not fit (and preempts again).
TEST_F(Preemption, TheFreeGpusAPreemptionCountedOnAreHeldDuringTheGracePeriod) {
  const auto a100 = caps_body("4xa100-pcie");
  const std::vector<std::string> queues = {"cnt-res", "cnt-od", "cnt-spot"};
  const auto spot = api.push(ml_job("cnt-spot", {{"ext_ml_gpu_count", 2}, {"ext_ml_priority_class", "spot"},
                                                 {"ext_ml_preemption_grace_period_s", 30}}));
  ASSERT_EQ(api.fetch(queues, "a1", 1, a100).size(), 1u);
  const auto reserved = api.push(ml_job("cnt-res", {{"ext_ml_gpu_count", 4}, {"ext_ml_priority_class", "reserved"}}));
  ASSERT_EQ(wait_for_directive("a1", spot).size(), 1u) << "no preempt directive arrived";
  const auto on_demand = api.push(ml_job("cnt-od", {{"ext_ml_gpu_count", 2}, {"ext_ml_priority_class", "on-demand"}}));

  // Two GPUs are free, but held: the on-demand job waits, and says why.
  EXPECT_EQ(api.fetch(queues, "a1", 1, a100).size(), 0u);
  auto why = api.get("/ojs/v1/jobs/" + on_demand + "/diagnosis").body["diagnosis"];
  EXPECT_TRUE(why["by_predicate"].contains("capacity_hold")) << why.dump();

  // The spot job leaves; the reserved job takes all four GPUs.
  auto nack = api.post("/ojs/v1/workers/nack", {{"job_id", spot}, {"worker_id", "a1"}, {"requeue", true},
                                                {"error", {{"code", "preempted"}, {"message", "preempted"}}}});
  ASSERT_EQ(nack.status, 200) << nack.body.dump();
  const auto got = api.fetch(queues, "a1", 1, a100);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["id"], reserved);
}

// A capacity hold ends when its preemptor is placed: the next reserved job may
// preempt on the same worker at once, not only once the first victim's grace period
// (30 s) and the hold's margin have passed.
TEST_F(Preemption, AHoldEndsWhenItsPreemptorIsPlacedAndTheWorkerMayBePreemptedAgain) {
  const auto a100 = caps_body("4xa100-pcie");
  const std::vector<std::string> queues = {"again-res", "again-spot"};
  std::vector<std::string> spots;
  for (int i = 0; i < 4; ++i) spots.push_back(api.push(spot_job("again-spot", 30)));
  ASSERT_EQ(api.fetch(queues, "a1", 4, a100).size(), 4u);
  const auto first = api.push(reserved_job("again-res"));
  auto directives = wait_for_directives("a1", spots);
  ASSERT_EQ(directives.size(), 1u) << "no preempt directive arrived";
  const std::string victim = directives[0]["job_id"];
  auto nack = api.post("/ojs/v1/workers/nack", {{"job_id", victim}, {"worker_id", "a1"}, {"requeue", true},
                                                {"error", {{"code", "preempted"}, {"message", "preempted"}}}});
  ASSERT_EQ(nack.status, 200) << nack.body.dump();
  auto got = api.fetch(queues, "a1", 1, a100);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["id"], first);

  const auto second = api.push(reserved_job("again-res"));
  std::vector<std::string> running;
  for (const auto& id : spots)
    if (id != victim) running.push_back(id);
  directives = wait_for_directives("a1", running);
  ASSERT_EQ(directives.size(), 1u) << "the worker stayed held after its preemptor was placed";
  EXPECT_EQ(directives[0]["preempted_for"], second);
}

TEST_F(Preemption, WorkerThatIgnoresTheDirectiveLosesTheJobAtTheDeadline) {
  const auto l4 = caps_body("l4-inference");
  const auto spot = api.push(spot_job("pre-ign-spot", 1));
  ASSERT_EQ(api.fetch({"pre-ign-res", "pre-ign-spot"}, "l4", 1, l4).size(), 1u);
  const auto reserved = api.push(reserved_job("pre-ign-res"));
  const auto directives = wait_for_directive("l4", spot);
  ASSERT_EQ(directives.size(), 1u);
  EXPECT_LE(directives[0]["grace_period_s"].get<int>(), 1);

  // Keep heartbeating, never release: the broker takes the job back at the deadline.
  json state;
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < until) {
    heartbeat("l4", {spot});
    state = info(spot);
    if (state["state"] != "active") break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(state["state"], "available");
  EXPECT_EQ(state["attempt"], 0);
  EXPECT_EQ(state["preemption_count"], 1);
  // The late worker can no longer finish it.
  EXPECT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", spot}, {"worker_id", "l4"}}).status, 409);
  auto got = api.fetch({"pre-ign-res", "pre-ign-spot"}, "l4", 1, l4);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["id"], reserved);
}

// Under fifo, sjf and fair a ready set's score carries the policy's band, not the
// priority class: a reserved job at the head of its class still preempts spot work
// (its class comes from the job's rank_base). Before, it waited for the spot job.
TEST_F(Preemption, ReservedJobPreemptsSpotWorkUnderEveryQueuePolicy) {
  const auto l4 = caps_body("l4-inference");  // 1 GPU
  for (const std::string policy : {"priority", "fifo", "sjf", "fair"}) {
    const std::string queue = "pre-pol-" + policy;
    auto put = api.call("PUT", "/ojs/v1/admin/queues/" + queue + "/config", {{"policy", policy}});
    ASSERT_EQ(put.status, 200) << put.body.dump();
    const std::string worker = "l4-" + policy;
    const auto spot = api.push(spot_job(queue, 30));
    ASSERT_EQ(api.fetch({queue}, worker, 1, l4).size(), 1u) << policy;
    const auto reserved = api.push(reserved_job(queue));
    const auto directives = wait_for_directive(worker, spot);
    ASSERT_EQ(directives.size(), 1u) << policy << ": the reserved job did not preempt the spot job";
    EXPECT_EQ(directives[0]["preempted_for"], reserved) << policy;
    // The spot job gives the GPU back; the reserved job takes it; the worker is free for the next policy.
    EXPECT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", spot}, {"worker_id", worker}}).status, 200) << policy;
    auto next = api.fetch({queue}, worker, 1, l4);
    ASSERT_EQ(next.size(), 1u) << policy;
    EXPECT_EQ(next[0]["id"], reserved) << policy;
    EXPECT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", reserved}, {"worker_id", worker}}).status, 200) << policy;
  }
}

// Under fair's tenant order a job takes a lower-class victim of its own
// tenant as before, but another tenant's only while its tenant is below its share
// and, after the move, at or below the victim tenant's (Kueue's
// LessThanOrEqualToFinalShare; half-life 0: the shares are the GPUs held now). On a
// 4-GPU worker full of team-a's spot jobs, team-b's on-demand jobs preempt two of
// them (0 -> 1/4 <= 3/4, 1/4 -> 2/4 <= 2/4), not a third (team-b at 2/4 is not below
// its half); team-a's reserved job then preempts team-a's own spot job. Under the
// class order the third preempts too (the class rule alone).
TEST_F(Preemption, FairTenantOrderPreemptsAnotherTenantOnlyUnderTheShareRule) {
  const auto a100 = caps_body("4xa100-pcie");  // 4 GPUs
  for (const std::string order : {"tenant", "class"}) {
    const std::string queue = "pre-fair-" + order, worker = "a100-" + order;
    auto put = api.call("PUT", "/ojs/v1/admin/queues/" + queue + "/config",
                        {{"policy", "fair"},
                         {"tenant_fairness", {{"weights", {{"team-a", 1}, {"team-b", 1}}}, {"half_life_seconds", 0}, {"order", order}}}});
    ASSERT_EQ(put.status, 200) << put.body.dump();
    auto pushed = [&](const std::string& tenant, const std::string& cls) {
      // A 1 s grace: the worker stays held for a preemptor until its victims' deadline + --capacity-hold-ms (3 s).
      json j = cls == "spot" ? spot_job(queue, 1) : ml_job(queue, {{"ext_ml_gpu_count", 1}, {"ext_ml_priority_class", cls}});
      j["meta"] = {{"tenant_id", tenant}};
      return api.push(j);
    };
    std::vector<std::string> running;
    for (int i = 0; i < 4; ++i) pushed("team-a", "spot");
    for (const auto& j : api.fetch({queue}, worker, 4, a100)) running.push_back(j["id"].get<std::string>());
    ASSERT_EQ(running.size(), 4u) << order;
    // The victim gives its GPU back (the worker acks it) and the preemptor is fetched.
    auto preempted_for = [&](const std::string& preemptor) -> std::string {
      const auto until = std::chrono::steady_clock::now() + 10s;
      while (std::chrono::steady_clock::now() < until) {
        auto beat = heartbeat(worker, running);
        for (const auto& d : beat["job_directives"]) {
          if (d["preempted_for"] != preemptor) continue;
          const std::string victim = d["job_id"];
          EXPECT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", victim}, {"worker_id", worker}}).status, 200);
          running.erase(std::find(running.begin(), running.end(), victim));
          auto next = api.fetch({queue}, worker, 1, a100);
          EXPECT_EQ(next.size(), 1u) << order;
          if (!next.empty()) running.push_back(next[0]["id"].get<std::string>());
          EXPECT_EQ(running.back(), preemptor) << order;
          return victim;
        }
        std::this_thread::sleep_for(100ms);
      }
      return "";
    };
    const auto tenant_of = [&](const std::string& id) { return info(id)["meta"]["tenant_id"].get<std::string>(); };
    const auto b1 = pushed("team-b", "on-demand");
    ASSERT_FALSE(preempted_for(b1).empty()) << order << ": team-b below its share did not preempt";
    const auto b2 = pushed("team-b", "on-demand");
    ASSERT_FALSE(preempted_for(b2).empty()) << order << ": 2/4 <= 2/4 did not preempt";
    const auto b3 = pushed("team-b", "on-demand");
    if (order == "class") {
      EXPECT_FALSE(preempted_for(b3).empty()) << "the class order preempts for the class alone";
      continue;
    }
    // Past b2's hold (1 s grace + 3 s), as long again of controller passes (every 100 ms).
    for (int i = 0; i < 80; ++i) {
      EXPECT_TRUE(heartbeat(worker, running)["job_directives"].empty()) << "team-b at its share preempted team-a";
      std::this_thread::sleep_for(100ms);
    }
    EXPECT_EQ(api.call("DELETE", "/ojs/v1/jobs/" + b3).status, 200);
    const auto a_reserved = pushed("team-a", "reserved");
    const auto victim = preempted_for(a_reserved);
    ASSERT_FALSE(victim.empty()) << "team-a's reserved job did not preempt its own spot job";
    EXPECT_EQ(tenant_of(victim), "team-a");
  }
}

// Raising a running job's priority class moves it in the victim order: the job
// least-progress-lost would preempt is spared, and it runs on with the same attempt.
TEST_F(Preemption, ARunningJobsPriorityChangeMovesItInTheVictimOrderWithoutARestart) {
  const auto a100 = caps_body("4xa100-pcie");
  const std::vector<std::string> queues = {"rerank-res", "rerank-spot"};
  std::vector<std::string> spot;
  for (int i = 0; i < 4; ++i) {
    spot.push_back(api.push(ml_job("rerank-spot", {{"ext_ml_gpu_count", 1}, {"ext_ml_priority_class", "spot"}})));
    ASSERT_EQ(api.fetch(queues, "a1", 1, a100).size(), 1u);
    std::this_thread::sleep_for(20ms);  // each started later: the last has lost least
  }
  const auto raised = spot.back();
  auto r = api.call("PATCH", "/ojs/v1/jobs/" + raised, {{"ext_ml_priority_class", "on-demand"}});
  ASSERT_EQ(r.status, 200) << r.body.dump();
  EXPECT_EQ(r.body["job"]["state"], "active");
  EXPECT_EQ(r.body["job"]["ext_ml_priority_class"], "on-demand");
  r = api.call("PATCH", "/ojs/v1/jobs/" + raised, {{"ext_ml_gpu_count", 2}});
  EXPECT_EQ(r.status, 409) << r.body.dump();

  api.push(ml_job("rerank-res", {{"ext_ml_gpu_count", 1}, {"ext_ml_priority_class", "reserved"}}));
  const auto directives = wait_for_directives("a1", spot);
  ASSERT_EQ(directives.size(), 1u) << directives.dump();
  EXPECT_EQ(directives[0]["job_id"], spot[2]) << "the raised job is no longer a spot victim";
  const auto job = info(raised);
  EXPECT_EQ(job["state"], "active");
  EXPECT_EQ(job["attempt"], 1);
  EXPECT_EQ(job["worker_id"], "a1");
}

TEST_F(Preemption, NoPreemptionForSameClassOrWhenTheJobWouldNotFit) {
  const auto l4 = caps_body("l4-inference");
  const auto spot = api.push(spot_job("pre-none", 30));
  ASSERT_EQ(api.fetch({"pre-none"}, "l4", 1, l4).size(), 1u);
  api.push(ml_job("pre-none", {{"ext_ml_gpu_count", 1}, {"ext_ml_priority_class", "spot"}}));                 // same class
  api.push(ml_job("pre-none", {{"ext_ml_gpu_count", 2}, {"ext_ml_priority_class", "reserved"}}));             // 2 GPUs: never fits an L4 box
  api.push(ml_job("pre-none", {{"ext_ml_gpu_memory_gb", 80}, {"ext_ml_priority_class", "reserved"}}));        // static refusal
  for (int i = 0; i < 10; ++i) {
    EXPECT_TRUE(heartbeat("l4", {spot})["job_directives"].empty());
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(info(spot)["state"], "active");
}

TEST_F(Preemption, CheckpointHistoryIsFifoAndOnlyTheHolderCommits) {
  const auto id = api.push(ml_job("ckpt", {{"ext_ml_checkpoint_max_count", 2}, {"retry", {{"max_attempts", 1}}}}));
  ASSERT_EQ(api.fetch({"ckpt"}, "w1").size(), 1u);
  for (int step = 1; step <= 3; ++step) {
    auto r = api.post("/ojs/v1/jobs/" + id + "/checkpoint",
                      {{"epoch", 0}, {"step", step * 100}, {"loss", 1.0 / step}, {"storage_key", "s3://b/" + std::to_string(step) + "/"}, {"worker_id", "w1"}});
    ASSERT_EQ(r.status, 200) << r.body.dump();
  }
  // The conformance runner's alias, job id in the body.
  auto alias = api.post("/ojs/v1/workers/checkpoint", {{"job_id", id}, {"step", 400}, {"storage_key", "s3://b/4/"}});
  ASSERT_EQ(alias.status, 200) << alias.body.dump();
  ASSERT_EQ(alias.body["checkpoints"].size(), 2u);
  EXPECT_EQ(alias.body["checkpoints"][0]["step"], 300);
  EXPECT_EQ(alias.body["checkpoints"][1]["step"], 400);
  EXPECT_EQ(alias.body["last_checkpoint"]["step"], 400);
  EXPECT_TRUE(alias.body["last_checkpoint"]["created_at"].is_string());

  auto other = api.post("/ojs/v1/jobs/" + id + "/checkpoint", {{"step", 500}, {"storage_key", "k"}, {"worker_id", "w2"}});
  EXPECT_EQ(other.status, 409) << other.body.dump();
  const std::vector<std::pair<json, std::string>> bad = {
      {{{"step", -1}, {"storage_key", "k"}}, "step"},
      {{{"step", 1.5}, {"storage_key", "k"}}, "step"},
      {{{"storage_key", "k"}}, "step"},
      {{{"step", 1}, {"epoch", "one"}, {"storage_key", "k"}}, "epoch"},
      {{{"step", 1}, {"loss", "low"}, {"storage_key", "k"}}, "loss"},
      {{{"step", 1}, {"metrics", json::array()}, {"storage_key", "k"}}, "metrics"},
      {{{"step", 1}}, "storage_key"},
      {{{"step", 1}, {"storage_key", 7}}, "storage_key"},
  };
  for (const auto& [body, field] : bad) {
    auto r = api.post("/ojs/v1/jobs/" + id + "/checkpoint", body);
    EXPECT_EQ(r.status, 400) << body.dump();
    EXPECT_EQ(r.body["error"]["details"]["field"], field) << r.body.dump();
  }
  EXPECT_EQ(api.get("/ojs/v1/jobs/" + id + "/checkpoint").body["last_checkpoint"]["step"], 400);

  // Attempts exhausted with checkpoints: dead letter, not discard.
  auto nack = api.post("/ojs/v1/workers/nack", {{"job_id", id}, {"error", {{"message", "oom"}}}});
  ASSERT_EQ(nack.status, 200);
  auto dead = api.get("/ojs/v1/dead-letter?queue=ckpt").body["jobs"];
  ASSERT_EQ(dead.size(), 1u) << dead.dump();
  EXPECT_EQ(dead[0]["id"], id);
  EXPECT_EQ(api.post("/ojs/v1/jobs/" + id + "/checkpoint", {{"step", 1}, {"storage_key", "k"}}).status, 409);  // not active
}

TEST_F(Preemption, CheckpointPrefixAllowList) {
  RedisServer r2;
  BrokerProcess strict{r2.url(), {"--checkpoint-prefix", "s3://allowed/"}};
  Api a{strict.url()};
  auto bad = a.post("/ojs/v1/jobs", ml_job("pfx", {{"ext_ml_checkpoint_storage_uri", "s3://other/x/"}}));
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.body["error"]["details"]["field"], "ext_ml_checkpoint_storage_uri") << bad.body.dump();
  EXPECT_EQ(a.post("/ojs/v1/jobs", ml_job("pfx", {{"ext_ml_checkpoint_storage_uri", "s3://allowed/x/"}})).status, 201);
  EXPECT_EQ(a.post("/ojs/v1/jobs", ml_job("pfx", {{"ext_ml_checkpoint_storage_uri", "s3://allowed/x"}})).status, 400);  // trailing slash
}

// Under `fair` too: its order is the priority class first, so an escalated
// job moves to the new class's band (before, it kept its place).
TEST_F(Preemption, WaitingJobEscalatesToItsTargetClass) {
  for (const std::string policy : {"priority", "fair"}) {
    const std::string queue = policy == "priority" ? "esc" : "esc-" + policy;
    auto put = api.call("PUT", "/ojs/v1/admin/queues/" + queue + "/config", {{"policy", policy}});
    ASSERT_EQ(put.status, 200) << put.body.dump();
    const auto low = api.push(ml_job(queue, {{"ext_ml_priority_class", "spot"}, {"ext_ml_priority_escalation", true},
                                           {"ext_ml_escalation_after_s", 1}, {"ext_ml_escalation_target_class", "reserved"}}));
    const auto first = api.push(ml_job(queue, {{"ext_ml_priority_class", "on-demand"}}));
    const auto second = api.push(ml_job(queue, {{"ext_ml_priority_class", "on-demand"}}));
    auto got = api.fetch({queue}, "w");
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0]["id"], first) << policy;  // on-demand before spot
    std::this_thread::sleep_for(1600ms);
    got = api.fetch({queue}, "w");
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0]["id"], low) << policy;  // escalated to reserved: ahead of the waiting on-demand job
    got = api.fetch({queue}, "w");
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0]["id"], second) << policy;
  }
}

TEST_F(Preemption, ReservationsHoldCapacityAndConfineTheirJobs) {
  const auto a100 = caps_body("4xa100-pcie");
  EXPECT_EQ(api.post("/ojs/v1/admin/reservations", {{"id", "r1"}, {"gpus", 2}}).status, 400);  // selects no worker
  auto created = api.post("/ojs/v1/admin/reservations", {{"id", "r1"}, {"worker_ids", {"inside"}}, {"gpus", 2}, {"ttl_s", 600}});
  ASSERT_EQ(created.status, 201) << created.body.dump();
  EXPECT_EQ(api.get("/ojs/v1/admin/reservations").body["reservations"].size(), 1u);

  const auto confined = api.push(ml_job("resv", {{"ext_ml_gpu_count", 1}, {"ext_ml_reservation_id", "r1"}}));
  EXPECT_EQ(api.fetch({"resv"}, "outside", 1, a100).size(), 0u);
  auto why = api.get("/ojs/v1/jobs/" + confined + "/diagnosis").body["diagnosis"];
  EXPECT_TRUE(why["by_predicate"].contains("reservation")) << why.dump();

  // Outside jobs may use only the GPUs the reservation does not hold (4 - 2).
  const auto big = api.push(ml_job("resv-other", {{"ext_ml_gpu_count", 3}}));
  EXPECT_EQ(api.fetch({"resv-other"}, "inside", 1, a100).size(), 0u);
  why = api.get("/ojs/v1/jobs/" + big + "/diagnosis").body["diagnosis"];
  EXPECT_TRUE(why["by_predicate"].contains("reservation")) << why.dump();
  api.push(ml_job("resv-other", {{"ext_ml_gpu_count", 2}}));
  auto got = api.fetch({"resv-other"}, "inside", 1, a100);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_NE(got[0]["id"], big);
  got = api.fetch({"resv"}, "inside", 1, a100);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["id"], confined);

  // A job naming a reservation that does not exist fails after its timeout.
  const auto orphan = api.push(ml_job("resv", {{"ext_ml_reservation_id", "nope"}, {"ext_ml_reservation_timeout_s", 1}}));
  json state;
  for (int i = 0; i < 50; ++i) {
    state = info(orphan);
    if (state["state"] != "available") break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(state["state"], "discarded");
  EXPECT_EQ(state["error"]["code"], "reservation_unavailable") << state.dump();

  EXPECT_EQ(api.call("DELETE", "/ojs/v1/admin/reservations/r1").status, 200);
  EXPECT_EQ(api.call("DELETE", "/ojs/v1/admin/reservations/r1").status, 404);
}

// A workflow's step that waited its reservation timeout in vain is discarded and
// ends its step (discard_waiting.lua takes the workflow keys only for such a job):
// the chain fails and its next step never runs.
TEST_F(Preemption, AWorkflowStepThatWaitedForAMissingReservationFailsItsChain) {
  json orphan = ml_job("resv-wf", {{"ext_ml_reservation_id", "nope"}, {"ext_ml_reservation_timeout_s", 1}});
  json after = ml_job("resv-wf", json::object());
  auto created = api.post("/ojs/v1/workflows", {{"type", "chain"}, {"steps", {orphan, after}}});
  ASSERT_EQ(created.status, 201) << created.body.dump();
  const std::string wf = created.body["workflow"]["id"];
  const std::string first = created.body["workflow"]["steps"][0]["job_id"];
  json state;
  for (int i = 0; i < 50; ++i) {
    state = info(first);
    if (state["state"] != "available") break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(state["state"], "discarded") << state.dump();
  const auto chain = api.get("/ojs/v1/workflows/" + wf).body["workflow"];
  EXPECT_EQ(chain["state"], "failed") << chain.dump();
  EXPECT_EQ(chain["steps"][0]["state"], "failed") << chain.dump();
  EXPECT_EQ(chain["steps"][1]["state"], "cancelled") << chain.dump();
}

// The same for a GPU-memory budget: an H100 holds 80 GB of a 100 GB budget, so a
// second 1-GPU job waits on memory, not on GPUs, and the spot holder gives it back.
TEST_F(Preemption, ReservedJobPreemptsSpotWorkHoldingTheGpuMemoryBudget) {
  ASSERT_EQ(api.call("PUT", "/ojs/v1/admin/queues/pre-mem/config", {{"budgets", {{"max_total_gpu_memory_gb", 100}}}}).status, 200);
  const auto dgx = caps_body("dgx-h100");
  json spot = spot_job("pre-mem", 20);
  spot["ext_ml_gpu_count"] = 1;
  const auto spot_id = api.push(spot);
  ASSERT_EQ(api.fetch({"pre-mem"}, "dgx", 1, dgx).size(), 1u);
  json reserved = reserved_job("pre-mem");
  reserved["ext_ml_gpu_count"] = 1;
  const auto reserved_id = api.push(reserved);
  EXPECT_EQ(api.fetch({"pre-mem"}, "dgx", 1, dgx).size(), 0u) << "over the memory budget: the reserved job waits";
  const auto directives = wait_for_directive("dgx", spot_id);
  ASSERT_EQ(directives.size(), 1u) << "no preempt directive for the memory holder";
  EXPECT_EQ(directives[0]["preempted_for"], reserved_id);
  ASSERT_EQ(api.post("/ojs/v1/workers/nack", {{"job_id", spot_id}, {"worker_id", "dgx"}, {"requeue", true},
                                               {"error", {{"code", "preempted"}, {"message", "preempted"}}}}).status, 200);
  auto next = api.fetch({"pre-mem"}, "dgx", 1, dgx);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0]["id"], reserved_id);
}

TEST_F(Preemption, ReservedJobPreemptsSpotWorkHoldingTheQueueBudget) {
  // Capacity is plentiful (an 8-GPU worker) but the queue's budget is 2 GPUs,
  // all held by a spot job: preemption frees budget, not devices.
  ASSERT_EQ(api.call("PUT", "/ojs/v1/admin/queues/pre-budget/config", {{"budgets", {{"max_total_gpus", 2}}}}).status, 200);
  const auto dgx = caps_body("dgx-h100");
  json spot = spot_job("pre-budget", 20);
  spot["ext_ml_gpu_count"] = 2;
  const auto spot_id = api.push(spot);
  ASSERT_EQ(api.fetch({"pre-budget"}, "dgx", 1, dgx).size(), 1u);
  json reserved = reserved_job("pre-budget");
  reserved["ext_ml_gpu_count"] = 2;
  const auto reserved_id = api.push(reserved);
  EXPECT_EQ(api.fetch({"pre-budget"}, "dgx", 1, dgx).size(), 0u) << "over budget: the reserved job waits";
  EXPECT_NE(info(reserved_id)["diagnosis"]["message"].get<std::string>().find("budget"), std::string::npos);

  const auto directives = wait_for_directive("dgx", spot_id);
  ASSERT_EQ(directives.size(), 1u) << "no preempt directive for the budget holder";
  EXPECT_EQ(directives[0]["preempted_for"], reserved_id);
  ASSERT_EQ(api.post("/ojs/v1/workers/nack", {{"job_id", spot_id}, {"worker_id", "dgx"}, {"requeue", true},
                                               {"error", {{"code", "preempted"}, {"message", "preempted"}}}}).status, 200);
  auto next = api.fetch({"pre-budget"}, "dgx", 1, dgx);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0]["id"], reserved_id) << "the freed budget goes to the higher class first";
  EXPECT_EQ(info(spot_id)["state"], "available");
  EXPECT_EQ(info(spot_id)["attempt"], 0);
}
