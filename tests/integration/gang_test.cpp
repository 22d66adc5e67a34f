// ext_ml_gang end to end: a real redis-server and broker; workers simulated
// by HTTP calls with the example capabilities (two 4 x A100 hosts).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;
using namespace std::chrono_literals;

namespace {

// A 4 x A100 host with its rack label and (when given) its rendezvous address and port.
json a100_host(const std::string& rack, const std::string& address = "", int port = 0) {
  json caps = example_worker("4xa100-pcie");
  caps["labels"]["rack"] = rack;
  if (!address.empty()) caps["labels"]["rendezvous.ojs.io/address"] = address;
  if (port > 0) caps["labels"]["rendezvous.ojs.io/port"] = std::to_string(port);
  return {{"capabilities", caps}};
}

json gang_job(const std::string& queue, json gang, json extra = json::object()) {
  json attrs = {{"ext_ml_gpu_count", 4}, {"ext_ml_gang", std::move(gang)}};
  for (auto it = extra.begin(); it != extra.end(); ++it) attrs[it.key()] = it.value();
  return ml_job(queue, attrs);
}

}  // namespace

class Gang : public ::testing::Test {
 protected:
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--preemption-interval-ms", "100", "--capacity-hold-ms", "3000"}};
  Api api{broker.url()};
  json w1 = a100_host("r1", "10.0.0.1", 29501);
  json w2 = a100_host("r1", "10.0.0.2", 29502);

  json info(const std::string& id) { return api.get("/ojs/v1/jobs/" + id).body["job"]; }
  long long gpus_charged(const std::string& queue) {
    return api.get("/ojs/v1/admin/queues/" + queue + "/budget").body["budget"]["in_use"]["gpus"].get<long long>();
  }
  long long gpus_free(const std::string& worker) {
    const auto reply = api.get("/ojs/v1/admin/workers");  // kept: the loop reads into it
    for (const auto& w : reply.body["workers"])
      if (w["id"] == worker) return w["gpus_free"].get<long long>();
    return -1;
  }
  long long nack(const std::string& id, const std::string& worker, bool requeue) {
    return api.post("/ojs/v1/workers/nack", {{"job_id", id}, {"worker_id", worker}, {"requeue", requeue},
                                             {"error", {{"code", "preempted"}, {"message", "stopped"}}}})
        .status;
  }
};

TEST_F(Gang, PushValidatesTheGangNamingFieldAndRule) {
  auto r = api.post("/ojs/v1/jobs", gang_job("gang-v", {{"size", 1}}));
  EXPECT_EQ(r.status, 400) << r.body.dump();
  EXPECT_EQ(r.body["error"]["details"]["field"], "ext_ml_gang.size") << r.body.dump();
  r = api.post("/ojs/v1/jobs", gang_job("gang-v", {{"size", 2}}, {{"ext_ml_reservation_id", "res-1"}}));
  EXPECT_EQ(r.status, 400) << r.body.dump();
  EXPECT_EQ(r.body["error"]["details"]["field"], "ext_ml_gang") << r.body.dump();
}

TEST_F(Gang, TwoByFourStartsOnTwoWorkersAtOnceWithRanksAndOneRendezvous) {
  const auto id = api.push(gang_job("gang-a", {{"size", 2}, {"same_label", "rack"}, {"timeout_seconds", 60}}));
  // The first member is held: nothing runs yet, but its 4 GPUs are taken and charged.
  EXPECT_EQ(api.fetch({"gang-a"}, "w1", 1, w1).size(), 0u);
  EXPECT_EQ(info(id)["state"], "available");
  EXPECT_EQ(gpus_charged("gang-a"), 4);
  EXPECT_EQ(gpus_free("w1"), 0);
  // A worker of another rack cannot complete a same-rack gang.
  EXPECT_EQ(api.fetch({"gang-a"}, "w3", 1, a100_host("r2")).size(), 0u);
  EXPECT_EQ(info(id)["state"], "available");
  // A held worker takes nothing else on the held GPUs.
  const auto plain = api.push(ml_job("gang-a", {{"ext_ml_gpu_count", 1}}));
  EXPECT_EQ(api.fetch({"gang-a"}, "w1", 1, w1).size(), 0u);

  // The second member completes the gang: it starts now on both.
  auto got = api.fetch({"gang-a"}, "w2", 1, w2);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["id"], id);
  EXPECT_EQ(got[0]["ext_ml_gang_rank"], 1);
  EXPECT_EQ(got[0]["ext_ml_gang_world_size"], 2);
  EXPECT_EQ(got[0]["ext_ml_gang_master_addr"], "10.0.0.1");
  EXPECT_EQ(got[0]["ext_ml_gang_master_port"], 29501);
  EXPECT_EQ(got[0]["ext_ml_gang_workers"], json({"w1", "w2"}));
  EXPECT_EQ(got[0]["ext_ml_assigned_devices"].size(), 4u);
  EXPECT_EQ(info(id)["state"], "active");
  EXPECT_EQ(gpus_charged("gang-a"), 8);

  // The held member gets the same start on its next FETCH, as rank 0.
  auto first = api.fetch({"gang-a"}, "w1", 1, w1);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0]["id"], id);
  EXPECT_EQ(first[0]["ext_ml_gang_rank"], 0);
  EXPECT_EQ(first[0]["ext_ml_gang_world_size"], 2);
  EXPECT_EQ(first[0]["ext_ml_gang_master_addr"], "10.0.0.1");
  EXPECT_EQ(first[0]["ext_ml_gang_master_port"], 29501);
  EXPECT_EQ(first[0]["attempt"], got[0]["attempt"]);
  EXPECT_EQ(api.fetch({"gang-a"}, "w1", 1, w1).size(), 0u);  // delivered once

  // Every member heartbeats the one job.
  auto beat = api.post("/ojs/v1/workers/heartbeat", {{"worker_id", "w2"}, {"active_jobs", {id}}});
  EXPECT_EQ(beat.body["jobs_extended"], json({id})) << beat.body.dump();

  // The gang completes when every rank has acknowledged; rank 0's result is kept.
  auto ack = api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "w2"}, {"result", {{"rank", 1}}}});
  ASSERT_EQ(ack.status, 200) << ack.body.dump();
  EXPECT_EQ(info(id)["state"], "active");
  ack = api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "w1"}, {"result", {{"rank", 0}}}});
  ASSERT_EQ(ack.status, 200) << ack.body.dump();
  const auto done = info(id);
  EXPECT_EQ(done["state"], "completed");
  EXPECT_EQ(done["result"]["rank"], 0);
  EXPECT_EQ(gpus_charged("gang-a"), 0);
  // The plain job waited behind the held GPUs and runs now.
  got = api.fetch({"gang-a"}, "w1", 1, w1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["id"], plain);
}

TEST_F(Gang, DeadlineExpiryReleasesEveryHold) {
  const auto id = api.push(gang_job("gang-t", {{"size", 2}, {"timeout_seconds", 1}}));
  EXPECT_EQ(api.fetch({"gang-t"}, "w1", 1, w1).size(), 0u);
  EXPECT_EQ(gpus_charged("gang-t"), 4);
  EXPECT_EQ(gpus_free("w1"), 0);
  // No second worker comes: the maintenance loop releases the hold at the deadline.
  long long charged = -1;
  for (int i = 0; i < 100 && charged != 0; ++i, sleep_ms(100)) charged = gpus_charged("gang-t");
  EXPECT_EQ(charged, 0);
  EXPECT_EQ(gpus_free("w1"), 4);
  auto job = info(id);
  EXPECT_EQ(job["state"], "available");
  EXPECT_EQ(job["attempt"], 0);  // it never started
  auto events = api.get("/ojs/v1/events?queues=gang-t&limit=50");
  EXPECT_NE(events.body.dump().find("job.gang_released"), std::string::npos) << events.body.dump();
}

TEST_F(Gang, TwoCompetingGangsNeverBothHoldHalf) {
  const auto a = api.push(gang_job("gang-c", {{"size", 2}, {"timeout_seconds", 60}}));
  const auto b = api.push(gang_job("gang-c", {{"size", 2}, {"timeout_seconds", 60}}));
  // Both workers fetch at the same time, repeatedly, until each runs a gang member.
  std::atomic<int> started{0};
  std::vector<json> runs(2);
  auto fetcher = [&](int n, const std::string& worker, const json& caps) {
    Api own(broker.url());
    for (int i = 0; i < 100 && runs[n].is_null(); ++i) {
      auto got = own.fetch({"gang-c"}, worker, 1, caps);
      if (!got.empty()) {
        runs[n] = got[0];
        ++started;
      }
      sleep_ms(20);
    }
  };
  std::thread t1(fetcher, 0, "w1", w1), t2(fetcher, 1, "w2", w2);
  t1.join();
  t2.join();
  ASSERT_EQ(started.load(), 2) << "the gang did not complete: two half-built gangs?";
  EXPECT_EQ(runs[0]["id"], runs[1]["id"]);
  EXPECT_EQ(runs[0]["id"], a);  // the oldest gang forms first
  EXPECT_EQ(std::set<int>({runs[0]["ext_ml_gang_rank"].get<int>(), runs[1]["ext_ml_gang_rank"].get<int>()}), std::set<int>({0, 1}));
  EXPECT_EQ(runs[0]["ext_ml_gang_master_addr"], runs[1]["ext_ml_gang_master_addr"]);
  auto other = info(b);
  EXPECT_EQ(other["state"], "available");
  EXPECT_EQ(gpus_charged("gang-c"), 8);  // gang a only: b holds nothing
}

TEST_F(Gang, AMemberFailureFailsTheWholeAttempt) {
  const auto id = api.push(gang_job("gang-f", {{"size", 2}}));
  EXPECT_EQ(api.fetch({"gang-f"}, "w1", 1, w1).size(), 0u);
  ASSERT_EQ(api.fetch({"gang-f"}, "w2", 1, w2).size(), 1u);
  ASSERT_EQ(api.fetch({"gang-f"}, "w1", 1, w1).size(), 1u);
  EXPECT_EQ(nack(id, "w2", false), 200);
  auto job = info(id);
  EXPECT_NE(job["state"], "active");
  EXPECT_EQ(gpus_charged("gang-f"), 0);
  EXPECT_EQ(gpus_free("w1"), 4);  // rank 0 no longer holds anything
  // Rank 0 cannot complete an attempt that failed.
  EXPECT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "w1"}}).status, 409);
  // A worker that is no member cannot act for the gang.
  EXPECT_EQ(nack(id, "w9", false), 409);
}

TEST_F(Gang, PreemptingOneMemberBringsTheWholeGangDownAndBackWithItsCheckpoint) {
  const auto id = api.push(gang_job("gang-p", {{"size", 2}},
                                    {{"ext_ml_priority_class", "spot"},
                                     {"ext_ml_preemption_grace_period_s", 30},
                                     {"ext_ml_checkpoint_on_preempt", true},
                                     {"ext_ml_checkpoint_enabled", true},
                                     {"ext_ml_checkpoint_storage_uri", "s3://ckpt/gang/"}}));
  // The workers serve both queues (the controller preempts only for queues a worker fetches from).
  EXPECT_EQ(api.fetch({"gang-r", "gang-p"}, "w1", 1, w1).size(), 0u);
  ASSERT_EQ(api.fetch({"gang-r", "gang-p"}, "w2", 1, w2).size(), 1u);
  ASSERT_EQ(api.fetch({"gang-r", "gang-p"}, "w1", 1, w1).size(), 1u);

  // A reserved job needs one whole A100 host: the controller preempts the gang on one of them.
  const auto reserved = api.push(ml_job("gang-r", {{"ext_ml_gpu_count", 4}, {"ext_ml_priority_class", "reserved"}}));
  json directives;
  for (int i = 0; i < 100 && directives.empty(); ++i, sleep_ms(100))
    directives = api.post("/ojs/v1/workers/heartbeat", {{"worker_id", "w1"}, {"active_jobs", {id}}}).body["job_directives"];
  ASSERT_EQ(directives.size(), 1u) << "no preempt directive arrived";
  EXPECT_EQ(directives[0]["job_id"], id);
  EXPECT_EQ(directives[0]["preempted_for"], reserved);
  // Every member gets the same directive: the gang is preempted as one.
  auto beat = api.post("/ojs/v1/workers/heartbeat", {{"worker_id", "w2"}, {"active_jobs", {id}}}).body;
  ASSERT_EQ(beat["job_directives"].size(), 1u) << beat.dump();
  EXPECT_EQ(beat["job_directives"][0]["job_id"], id);

  // One member commits the checkpoint, another releases the gang.
  auto commit = api.post("/ojs/v1/jobs/" + id + "/checkpoint",
                         {{"epoch", 3}, {"step", 1200}, {"storage_key", "s3://ckpt/gang/step-1200/"}, {"worker_id", "w2"}});
  ASSERT_EQ(commit.status, 200) << commit.body.dump();
  EXPECT_EQ(nack(id, "w1", true), 200);
  auto job = info(id);
  EXPECT_EQ(job["state"], "available");
  EXPECT_EQ(job["attempt"], 0);
  EXPECT_EQ(job["preemption_count"], 1);
  EXPECT_EQ(job["last_checkpoint"]["step"], 1200);
  // The whole gang is down: no member holds it, no directive remains.
  beat = api.post("/ojs/v1/workers/heartbeat", {{"worker_id", "w2"}, {"active_jobs", {id}}}).body;
  EXPECT_TRUE(beat["jobs_extended"].empty()) << beat.dump();
  EXPECT_TRUE(beat["job_directives"].empty()) << beat.dump();
  EXPECT_EQ(nack(id, "w2", true), 409);
  EXPECT_EQ(gpus_charged("gang-p"), 0);

  // The reserved job runs and finishes on one host.
  std::string reserved_on;
  for (int i = 0; i < 100 && reserved_on.empty(); ++i, sleep_ms(100))
    for (const auto& [worker, caps] : {std::pair{std::string("w1"), w1}, std::pair{std::string("w2"), w2}})
      if (reserved_on.empty() && !api.fetch({"gang-r"}, worker, 1, caps).empty()) reserved_on = worker;
  ASSERT_FALSE(reserved_on.empty());
  ASSERT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", reserved}, {"worker_id", reserved_on}}).status, 200);

  // The gang comes back on both hosts, every member with the checkpoint.
  std::map<std::string, json> back;
  for (int i = 0; i < 100 && back.size() < 2; ++i, sleep_ms(100))
    for (const auto& [worker, caps] : {std::pair{std::string("w1"), w1}, std::pair{std::string("w2"), w2}})
      if (!back.count(worker))
        if (auto got = api.fetch({"gang-r", "gang-p"}, worker, 1, caps); !got.empty()) back[worker] = got[0];
  ASSERT_EQ(back.size(), 2u) << "the gang did not come back";
  for (const auto& [worker, got] : back) {
    EXPECT_EQ(got["id"], id);
    EXPECT_EQ(got["attempt"], 1);
    EXPECT_EQ(got["preemption_count"], 1);
    EXPECT_EQ(got["last_checkpoint"]["step"], 1200);
    EXPECT_EQ(got["last_checkpoint"]["storage_key"], "s3://ckpt/gang/step-1200/");
  }
  EXPECT_NE(back["w1"]["ext_ml_gang_rank"], back["w2"]["ext_ml_gang_rank"]);
}

// A gang is one job for the queue rate limit: it needs room to start forming
// (and to start); once running it takes the room of one job.
TEST_F(Gang, QueueRateLimitCountsTheGangAsOneJob) {
  const std::string q = "gang-rate";
  ASSERT_EQ(api.call("PUT", "/ojs/v1/admin/queues/" + q + "/config", {{"rate_limit", {{"concurrency", 1}}}}).status, 200);
  const auto plain = api.push(ml_job(q, {{"ext_ml_gpu_count", 1}}));
  const auto gang = api.push(gang_job(q, {{"size", 2}}));
  const json w3 = {{"capabilities", example_worker("l4-inference")}};  // 1 GPU: never a member
  ASSERT_EQ(api.fetch({q}, "w3", 1, w3).size(), 1u);
  // The queue's one slot is taken: the gang does not start holding members.
  EXPECT_EQ(api.fetch({q}, "w1", 1, w1).size(), 0u);
  EXPECT_EQ(gpus_free("w1"), 4) << "a rate-limited gang held a member";
  EXPECT_EQ(gpus_charged(q), 1) << "a rate-limited gang charged a member";
  ASSERT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", plain}, {"worker_id", "w3"}}).status, 200);
  EXPECT_EQ(api.fetch({q}, "w1", 1, w1).size(), 0u);  // held
  auto started = api.fetch({q}, "w2", 1, w2);
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0]["id"], gang);
  // Running, the gang fills the slot.
  api.push(ml_job(q, {{"ext_ml_gpu_count", 1}}));
  EXPECT_EQ(api.fetch({q}, "w3", 1, w3).size(), 0u);
}

// expires_at: a gang past it is discarded, whether it was still waiting or
// already holding members (whose GPUs are released).
TEST_F(Gang, ExpiredGangIsDiscardedInsteadOfHeldOrStarted) {
  const std::string q = "gang-ttl";
  json forming = gang_job(q, {{"size", 2}, {"timeout_seconds", 60}});
  forming["options"]["expires_at"] = "+PT2S";
  const auto id = api.push(forming);
  EXPECT_EQ(api.fetch({q}, "w1", 1, w1).size(), 0u);
  ASSERT_EQ(gpus_charged(q), 4);  // w1 is held
  sleep_ms(2500);
  EXPECT_EQ(api.fetch({q}, "w2", 1, w2).size(), 0u);
  EXPECT_EQ(info(id)["state"], "discarded");
  EXPECT_EQ(gpus_charged(q), 0);
  EXPECT_EQ(gpus_free("w1"), 4);

  json waiting = gang_job(q, {{"size", 2}});
  waiting["options"]["expires_at"] = "+PT1S";
  const auto late = api.push(waiting);
  sleep_ms(1500);
  EXPECT_EQ(api.fetch({q}, "w1", 1, w1).size(), 0u);
  EXPECT_EQ(info(late)["state"], "discarded");
  EXPECT_EQ(gpus_charged(q), 0);
}

// A broker caches each queue's class set; a gang class pushed after a worker's last
// FETCH must be offered to that worker's next FETCH, not one FETCH later.
TEST_F(Gang, AGangClassNewerThanTheCachedClassSetIsJoinedOnTheNextFetch) {
  api.push(ml_job("gang-new", {{"ext_ml_gpu_count", 8}}));  // fits neither host: stays, and its class is cached
  EXPECT_EQ(api.fetch({"gang-new"}, "w1", 1, w1).size(), 0u);
  EXPECT_EQ(api.fetch({"gang-new"}, "w2", 1, w2).size(), 0u);
  const auto id = api.push(gang_job("gang-new", {{"size", 2}, {"timeout_seconds", 60}}));
  EXPECT_EQ(api.fetch({"gang-new"}, "w1", 1, w1).size(), 0u);
  EXPECT_EQ(gpus_charged("gang-new"), 4) << "w1 is held as the gang's first member";
  const auto started = api.fetch({"gang-new"}, "w2", 1, w2);
  ASSERT_EQ(started.size(), 1u) << "w2 completes the gang";
  EXPECT_EQ(started[0]["id"], id);
}

// A GPU-memory budget charges each held member's memory like a single job's (four
// 40 GB A100s: 160 GB a member) and gives it all back when the gang ends.
TEST_F(Gang, GpuMemoryBudgetChargesEveryMember) {
  const std::string q = "gang-mem";
  ASSERT_EQ(api.call("PUT", "/ojs/v1/admin/queues/" + q + "/config", {{"budgets", {{"max_total_gpu_memory_gb", 200}}}}).status, 200);
  const auto id = api.push(gang_job(q, {{"size", 2}, {"timeout_seconds", 60}}));
  const auto memory_in_use = [&] {
    return api.get("/ojs/v1/admin/queues/" + q + "/budget").body["budget"]["in_use"]["gpu_memory_gb"].get<double>();
  };
  EXPECT_EQ(api.fetch({q}, "w1", 1, w1).size(), 0u);  // held
  EXPECT_EQ(memory_in_use(), 160);
  // A second member would hold 320 GB: over the 200 GB budget, it waits and the gang forms no further.
  EXPECT_EQ(api.fetch({q}, "w2", 1, w2).size(), 0u);
  EXPECT_EQ(memory_in_use(), 160);
  EXPECT_EQ(info(id)["state"], "available");
  const auto diagnosis = api.get("/ojs/v1/jobs/" + id + "/diagnosis").body.dump();
  EXPECT_NE(diagnosis.find("GB of GPU memory"), std::string::npos) << diagnosis;
  const auto reconcile = api.get("/ojs/v1/admin/queues/" + q + "/reconcile").body["reconciliation"];
  EXPECT_EQ(reconcile["consistent"], true) << reconcile.dump();
  // The budget raised: the gang completes and holds both members' memory until it ends.
  ASSERT_EQ(api.call("PUT", "/ojs/v1/admin/queues/" + q + "/config", {{"budgets", {{"max_total_gpu_memory_gb", 400}}}}).status, 200);
  ASSERT_EQ(api.fetch({q}, "w2", 1, w2).size(), 1u);
  EXPECT_EQ(memory_in_use(), 320);
  ASSERT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "w2"}}).status, 200);
  ASSERT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "w1"}}).status, 200);
  EXPECT_EQ(memory_in_use(), 0);
}

// A worker eligible for two gang classes: the claim reads both classes' heads and
// holds the worker for the best one (each class line carries its memory charge too).
TEST_F(Gang, AWorkerEligibleForTwoGangClassesJoinsTheBestHead) {
  const auto first = api.push(gang_job("gang-two", {{"size", 2}}));
  api.push(gang_job("gang-two", {{"size", 2}}, {{"ext_ml_gpu_count", 2}}));
  json body = {{"queues", {"gang-two"}}, {"worker_id", "w1"}, {"count", 1}};
  body.update(w1);
  const auto r = api.post("/ojs/v1/workers/fetch", body);
  ASSERT_EQ(r.status, 200) << r.body.dump();
  EXPECT_EQ(gpus_charged("gang-two"), 4) << "the older head (4 GPUs a member) holds the worker";
  EXPECT_EQ(info(first)["state"], "available");
}
