// Elastic gangs (ext_ml_gang {min_size, max_size}) end to end: a real redis-server
// and broker; workers simulated by HTTP calls with the example capabilities
// (4 x A100 hosts). A gang starts at min_size, grows by the workers that FETCH while
// nothing ahead of it in the queue could use them, and every member learns the new
// size, its rank and the generation from its heartbeat reply.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "support/child_process.hpp"
#include "support/gang_hosts.hpp"
#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

std::string worker(int n) { return "w" + std::to_string(n); }

json gang_job(const std::string& queue, json gang, json extra = json::object()) {
  json attrs = {{"ext_ml_gpu_count", 4}, {"ext_ml_gang", std::move(gang)}};
  for (auto it = extra.begin(); it != extra.end(); ++it) attrs[it.key()] = it.value();
  return ml_job(queue, attrs);
}

}  // namespace

class ElasticGang : public ::testing::Test {
 protected:
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};

  json info(const std::string& id) { return api.get("/ojs/v1/jobs/" + id).body["job"]; }
  json fetch(const std::string& queue, int n) { return api.fetch({queue}, worker(n), 1, a100_host(n)); }
  long long gpus_charged(const std::string& queue) {
    return api.get("/ojs/v1/admin/queues/" + queue + "/budget").body["budget"]["in_use"]["gpus"].get<long long>();
  }
  // The gang entry of the heartbeat reply of worker n running job `id` (null: none).
  json beat(int n, const std::string& id) {
    const auto r = api.post("/ojs/v1/workers/heartbeat", {{"worker_id", worker(n)}, {"active_jobs", {id}}});
    EXPECT_EQ(r.status, 200) << r.body.dump();
    for (const auto& g : r.body.value("gangs", json::array()))
      if (g.value("job_id", "") == id) return g;
    return nullptr;
  }
  // Nodes 1..n free up one at a time, each FETCHing, and every node before it FETCHes
  // again (a member held while its gang forms learns the start on its next FETCH).
  // Job -> the workers running it.
  std::map<std::string, std::set<int>> free_one_by_one(const std::string& queue, int nodes) {
    std::map<std::string, std::set<int>> on;
    const auto take = [&](int n) {
      for (const auto& got : fetch(queue, n)) on[got["id"].get<std::string>()].insert(n);
    };
    for (int n = 1; n <= nodes; ++n) {
      take(n);
      for (int m = 1; m < n; ++m) take(m);
    }
    return on;
  }
  json resize_events(const std::string& queue) {
    return api.get("/ojs/v1/events?queues=" + queue + "&types=job.gang_resized").body["events"];
  }
};

TEST_F(ElasticGang, PushValidatesTheSizesNamingFieldAndRule) {
  const auto field_of = [&](json gang) {
    const auto r = api.post("/ojs/v1/jobs", gang_job("el-v", std::move(gang)));
    EXPECT_EQ(r.status, 400) << r.body.dump();
    return r.body["error"]["details"]["field"].get<std::string>();
  };
  EXPECT_EQ(field_of({{"min_size", 4}, {"max_size", 2}}), "ext_ml_gang.max_size");
  EXPECT_EQ(field_of({{"min_size", 0}, {"max_size", 2}}), "ext_ml_gang.min_size");
  EXPECT_EQ(field_of({{"min_size", 2}, {"max_size", 65}}), "ext_ml_gang.max_size");
  EXPECT_EQ(field_of({{"min_size", 2}}), "ext_ml_gang.max_size");
  EXPECT_EQ(field_of({{"max_size", 4}}), "ext_ml_gang.min_size");
  EXPECT_EQ(field_of({{"size", 2}, {"max_size", 4}}), "ext_ml_gang.max_size");
  EXPECT_EQ(api.post("/ojs/v1/jobs", gang_job("el-v", {{"min_size", 1}, {"max_size", 2}})).status, 201);
}

TEST_F(ElasticGang, TwoToEightStartsAtTwoAndGrowsAsWorkersFetch) {
  const std::string q = "el-grow";
  const auto id = api.push(gang_job(q, {{"min_size", 2}, {"max_size", 8}}));
  // Two workers are free: the first is held, the second starts the gang at 2.
  EXPECT_EQ(fetch(q, 1).size(), 0u);
  EXPECT_EQ(info(id)["state"], "available");
  auto got = fetch(q, 2);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["ext_ml_gang_rank"], 1);
  EXPECT_EQ(got[0]["ext_ml_gang_world_size"], 2);
  EXPECT_EQ(got[0]["ext_ml_gang_generation"], 1);
  EXPECT_EQ(info(id)["state"], "active");
  got = fetch(q, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["ext_ml_gang_rank"], 0);
  EXPECT_EQ(got[0]["ext_ml_gang_world_size"], 2);
  EXPECT_EQ(beat(1, id)["ext_ml_gang_generation"], 1);
  EXPECT_EQ(gpus_charged(q), 8);

  // Six more free up, one at a time: each joins at once with the next rank.
  for (int n = 3; n <= 8; ++n) {
    got = fetch(q, n);
    ASSERT_EQ(got.size(), 1u) << "worker " << n;
    EXPECT_EQ(got[0]["id"], id);
    EXPECT_EQ(got[0]["ext_ml_gang_rank"], n - 1);
    EXPECT_EQ(got[0]["ext_ml_gang_world_size"], n);
    EXPECT_EQ(got[0]["ext_ml_gang_generation"], n - 1);
    EXPECT_EQ(got[0]["ext_ml_gang_master_addr"], "10.0.0.1");  // rank 0 stays the rendezvous
    EXPECT_EQ(got[0]["ext_ml_assigned_devices"].size(), 4u);
  }
  EXPECT_EQ(gpus_charged(q), 32);
  // At max_size it takes no more.
  EXPECT_EQ(fetch(q, 9).size(), 0u);
  EXPECT_EQ(info(id)["state"], "active");

  // Every member learns the new world size, its rank and the generation from its heartbeat.
  std::set<int> ranks;
  for (int n = 1; n <= 8; ++n) {
    const auto g = beat(n, id);
    ASSERT_TRUE(g.is_object()) << "worker " << n;
    EXPECT_EQ(g["ext_ml_gang_world_size"], 8);
    EXPECT_EQ(g["ext_ml_gang_generation"], 7);
    EXPECT_EQ(g["ext_ml_gang_rank"], n - 1);
    EXPECT_EQ(g["ext_ml_gang_master_addr"], "10.0.0.1");
    ranks.insert(g["ext_ml_gang_rank"].get<int>());
  }
  EXPECT_EQ(ranks.size(), 8u);
  EXPECT_TRUE(beat(9, id).is_null());  // not a member

  // One event per resize, with the sizes and the generation (newest first).
  const auto events = resize_events(q);
  ASSERT_EQ(events.size(), 6u) << events.dump();
  EXPECT_EQ(events[5]["data"]["from"], "2") << events[5].dump();
  EXPECT_EQ(events[5]["data"]["to"], "3");
  EXPECT_EQ(events[5]["data"]["generation"], "2");
  EXPECT_EQ(events[0]["data"]["from"], "7");
  EXPECT_EQ(events[0]["data"]["to"], "8");
  EXPECT_EQ(events[0]["data"]["generation"], "7");
  EXPECT_EQ(events[0]["data"]["worker_id"], "w8");

  // It completes when every member of its last size has ACKed, and gives all back.
  for (int n = 1; n <= 8; ++n) {
    const auto ack = api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", worker(n)}, {"result", {{"rank", n - 1}}}});
    ASSERT_EQ(ack.status, 200) << ack.body.dump();
    EXPECT_EQ(info(id)["state"], n < 8 ? "active" : "completed") << "after worker " << n;
  }
  EXPECT_EQ(info(id)["result"]["rank"], 0);
  EXPECT_EQ(gpus_charged(q), 0);
}

TEST_F(ElasticGang, AJobAheadInTheQueueTakesTheWorkerBeforeTheGangGrows) {
  const std::string q = "el-order";
  const auto id = api.push(gang_job(q, {{"min_size", 2}, {"max_size", 4}}));
  ASSERT_EQ(fetch(q, 1).size(), 0u);
  ASSERT_EQ(fetch(q, 2).size(), 1u);
  // A higher-priority job that worker 3 could run waits: it gets worker 3.
  const auto urgent = api.push(ml_job(q, {{"ext_ml_gpu_count", 4}, {"priority", 50}}));
  auto got = fetch(q, 3);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["id"], urgent);
  EXPECT_EQ(beat(1, id)["ext_ml_gang_world_size"], 2);
  // A job behind the gang in the queue's order does not stop it growing.
  const auto later = api.push(ml_job(q, {{"ext_ml_gpu_count", 4}, {"priority", -50}}));
  got = fetch(q, 4);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["id"], id);
  EXPECT_EQ(got[0]["ext_ml_gang_world_size"], 3);
  EXPECT_EQ(info(later)["state"], "available");
}

TEST_F(ElasticGang, AFixedGangNeverGrowsAndKeepsGenerationOne) {
  const std::string q = "el-fixed";
  const auto id = api.push(gang_job(q, {{"size", 2}}));
  ASSERT_EQ(fetch(q, 1).size(), 0u);
  ASSERT_EQ(fetch(q, 2).size(), 1u);
  EXPECT_EQ(fetch(q, 3).size(), 0u);
  const auto g = beat(2, id);
  ASSERT_TRUE(g.is_object());
  EXPECT_EQ(g["ext_ml_gang_world_size"], 2);
  EXPECT_EQ(g["ext_ml_gang_generation"], 1);
  EXPECT_TRUE(resize_events(q).empty());
  EXPECT_EQ(gpus_charged(q), 8);
}

TEST_F(ElasticGang, AMemberNackEndsTheAttemptAndTheGangStartsAgainAtItsMinimum) {
  const std::string q = "el-retry";
  const auto id = api.push(gang_job(q, {{"min_size", 2}, {"max_size", 3}}));
  ASSERT_EQ(fetch(q, 1).size(), 0u);
  ASSERT_EQ(fetch(q, 2).size(), 1u);
  ASSERT_EQ(fetch(q, 3).size(), 1u);  // grown to 3
  const auto nack = api.post("/ojs/v1/workers/nack", {{"job_id", id}, {"worker_id", worker(3)}, {"requeue", true},
                                                     {"error", {{"code", "preempted"}, {"message", "stopped"}}}});
  ASSERT_EQ(nack.status, 200) << nack.body.dump();
  EXPECT_EQ(gpus_charged(q), 0);
  // It re-forms from scratch: two members start it again, at generation 1.
  EXPECT_EQ(fetch(q, 4).size(), 0u);
  const auto got = fetch(q, 5);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["ext_ml_gang_world_size"], 2);
  EXPECT_EQ(got[0]["ext_ml_gang_generation"], 1);
}

TEST_F(ElasticGang, TwoEqualElasticGangsSplitEightNodesFourAndFour) {
  const std::string q = "el-share";
  const auto a = api.push(gang_job(q, {{"min_size", 2}, {"max_size", 8}}));
  const auto b = api.push(gang_job(q, {{"min_size", 2}, {"max_size", 8}}));
  auto on = free_one_by_one(q, 8);
  EXPECT_EQ(on[a].size(), 4u) << "a on " << json(on[a]).dump() << ", b on " << json(on[b]).dump();
  EXPECT_EQ(on[b].size(), 4u);
  EXPECT_EQ(beat(*on[a].begin(), a)["ext_ml_gang_world_size"], 4);
  EXPECT_EQ(beat(*on[b].begin(), b)["ext_ml_gang_world_size"], 4);
}

// Under `fair` the split follows the tenants' weights: team-a (1) and team-b (3) each
// run a 2..8 gang; of the 8 nodes team-b's gang gets 6 (4/4 with equal tenants).
TEST_F(ElasticGang, ElasticGangsOfTenantsWeightedOneToThreeSplitEightNodesTwoAndSix) {
  const std::string q = "el-weighted";
  const auto put = api.call("PUT", "/ojs/v1/admin/queues/" + q + "/config",
                            {{"policy", "fair"}, {"tenant_fairness", {{"weights", {{"team-a", 1}, {"team-b", 3}}}}}});
  ASSERT_EQ(put.status, 200) << put.body.dump();
  const auto a = api.push(gang_job(q, {{"min_size", 2}, {"max_size", 8}}, {{"meta", {{"tenant_id", "team-a"}}}}));
  const auto b = api.push(gang_job(q, {{"min_size", 2}, {"max_size", 8}}, {{"meta", {{"tenant_id", "team-b"}}}}));
  auto on = free_one_by_one(q, 8);
  EXPECT_EQ(on[a].size(), 2u) << "a on " << json(on[a]).dump() << ", b on " << json(on[b]).dump();
  EXPECT_EQ(on[b].size(), 6u);
  EXPECT_EQ(beat(*on[b].begin(), b)["ext_ml_gang_world_size"], 6);
}

// The real worker agent: a 1..2 gang starts on the first agent alone; the second
// agent grows it; the first learns the new size from its heartbeat and runs its
// command again at world size 2; both ACK and the gang completes.
TEST_F(ElasticGang, RealAgentsRestartTheFirstMemberAtTheNewSize) {
  const std::string q = "el-agents";
  const std::string log = make_temp_dir("el-agents") + "/runs.log";
  const std::string command = "ml.el=echo \"$OJS_GANG_GENERATION $WORLD_SIZE $RANK\" >> " + log +
                              "; if [ \"$OJS_GANG_GENERATION\" = 2 ]; then echo '{}'; exit 0; fi;"
                              " trap 'exit 0' TERM; while :; do sleep 0.05; done";
  const auto agent = [&](const std::string& id) {
    return ChildProcess({binary_path("worker/worker"), "--broker", broker.url(), "--worker-id", id, "--queues", q,
                         "--capabilities-file", std::string(OJS_SOURCE_DIR) + "/examples/workers/cpu-node.json",
                         "--poll-interval-ms", "100", "--heartbeat-interval-s", "1", "--log-level", "warn",
                         "--concurrency", "1", "--command", command, "--work-dir", make_temp_dir("el-" + id)});
  };
  json job = ml_job(q, {{"ext_ml_gang", {{"min_size", 1}, {"max_size", 2}}}});
  job["type"] = "ml.el";
  const auto id = api.push(job);
  auto first = agent("el-1");
  ASSERT_EQ(wait_for_state(api, id, "active")["state"], "active");
  auto second = agent("el-2");
  const auto done = wait_for_state(api, id, "completed", 30000);
  EXPECT_EQ(done["state"], "completed") << done.dump();
  std::ifstream in(log);
  std::multiset<std::string> runs;
  for (std::string line; std::getline(in, line);) runs.insert(line);
  EXPECT_EQ(runs, (std::multiset<std::string>{"1 1 0", "2 2 0", "2 2 1"}));
  EXPECT_EQ(resize_events(q).size(), 1u);
}

// Shrink instead of evict: a higher-class gang needs nodes that an elastic gang
// holds above its minimum; members leave one by one (grace, checkpoint) and the
// elastic gang runs on smaller, then grows back once the nodes free up.
class ElasticShrink : public ::testing::Test {
 protected:
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--preemption-interval-ms", "100", "--capacity-hold-ms", "5000"}};
  Api api{broker.url()};

  // Workers serve both queues: the controller preempts only for queues a worker fetches from.
  json fetch(int n) { return api.fetch({"sh-hi", "sh-el"}, worker(n), 1, a100_host(n)); }
  json beat(int n, const std::vector<std::string>& active) {
    const auto r = api.post("/ojs/v1/workers/heartbeat", {{"worker_id", worker(n)}, {"active_jobs", active}});
    EXPECT_EQ(r.status, 200) << r.body.dump();
    return r.body;
  }
  json gang_of(const json& beat, const std::string& id) {
    for (const auto& g : beat.value("gangs", json::array()))
      if (g.value("job_id", "") == id) return g;
    return nullptr;
  }
  json info(const std::string& id) { return api.get("/ojs/v1/jobs/" + id).body["job"]; }
  // A 2..8 gang `id`, alone in the queue, on workers 1..8: two free nodes start it
  // (worker 1 held, worker 2 starts it, worker 1 learns the start), six grow it.
  void grow_to_eight(const std::string& id) {
    ASSERT_EQ(fetch(1).size(), 0u);
    ASSERT_EQ(fetch(2).size(), 1u);
    ASSERT_EQ(fetch(1).size(), 1u);
    for (int n = 3; n <= 8; ++n) ASSERT_EQ(fetch(n).size(), 1u) << "worker " << n;
    ASSERT_EQ(members(id), 8);
  }
  int members(const std::string& id) {
    const auto g = gang_of(beat(1, {id}), id);  // rank 0 on w1 stays in the gang
    return g.is_object() ? g["ext_ml_gang_world_size"].get<int>() : 0;
  }
};

TEST_F(ElasticShrink, TwoToEightShrinksToFourForAHigherClassGangAndGrowsBack) {
  const auto el = api.push(gang_job("sh-el", {{"min_size", 2}, {"max_size", 8}},
                                     {{"ext_ml_priority_class", "spot"},
                                      {"ext_ml_preemption_grace_period_s", 2},
                                      {"ext_ml_checkpoint_on_preempt", true},
                                      {"ext_ml_checkpoint_enabled", true},
                                      {"ext_ml_checkpoint_storage_uri", "s3://ckpt/el/"}}));
  // Two nodes free: it starts at 2; six more free up: it grows to 8.
  ASSERT_NO_FATAL_FAILURE(grow_to_eight(el));

  // A reserved 4-node gang arrives: four members are told to leave, each alone.
  const auto hi = api.push(gang_job("sh-hi", {{"size", 4}}, {{"ext_ml_priority_class", "reserved"}}));
  std::map<int, json> told;  // worker -> its directive
  ASSERT_TRUE(wait_until([&] {
    for (int n = 1; n <= 8; ++n) {
      const auto reply = beat(n, {el});
      for (const auto& d : reply["job_directives"]) told[n] = d;
    }
    return told.size() >= 4;
  }, 10));
  ASSERT_EQ(told.size(), 4u) << "never below 2, never more than the 4 it needs";
  EXPECT_FALSE(told.count(1)) << "rank 0, the rendezvous, stays";
  for (const auto& [n, d] : told) {
    EXPECT_EQ(d["job_id"], el);
    EXPECT_EQ(d["action"], "preempt");
    EXPECT_EQ(d["preempted_for"], hi);
    EXPECT_EQ(d["checkpoint"], true);
    EXPECT_LE(d["grace_period_s"].get<int>(), 2);
  }
  EXPECT_EQ(info(el)["state"], "active");
  EXPECT_EQ(members(el), 8);  // leaving takes the grace period

  // The first leaver commits a checkpoint and releases its place; the next two release
  // theirs; the last lets its grace period run out.
  auto it = told.begin();
  const int checkpointer = it->first;
  auto commit = api.post("/ojs/v1/jobs/" + el + "/checkpoint",
                          {{"epoch", 1}, {"step", 900}, {"storage_key", "s3://ckpt/el/step-900/"}, {"worker_id", worker(checkpointer)}});
  ASSERT_EQ(commit.status, 200) << commit.body.dump();
  for (int k = 0; k < 3; ++k, ++it) {
    const auto nack = api.post("/ojs/v1/workers/nack", {{"job_id", el}, {"worker_id", worker(it->first)}, {"requeue", true},
                                                        {"error", {{"code", "preempted"}, {"message", "leaving"}}}});
    ASSERT_EQ(nack.status, 200) << nack.body.dump();
    EXPECT_EQ(info(el)["state"], "active");
  }
  EXPECT_EQ(members(el), 5);
  ASSERT_TRUE(wait_until([&] { return members(el) == 4; }, 10)) << "the overdue member did not leave";
  const auto job = info(el);
  EXPECT_EQ(job["state"], "active");
  EXPECT_EQ(job["attempt"], 1) << "the gang kept its attempt";
  EXPECT_EQ(job["last_checkpoint"]["step"], 900);

  // Every remaining member learns the new size, its rank and a new generation.
  std::set<int> ranks;
  for (int n = 1; n <= 8; ++n) {
    if (told.count(n)) {
      EXPECT_TRUE(gang_of(beat(n, {el}), el).is_null()) << "worker " << n << " left";
      continue;
    }
    const auto g = gang_of(beat(n, {el}), el);
    ASSERT_TRUE(g.is_object()) << "worker " << n;
    EXPECT_EQ(g["ext_ml_gang_world_size"], 4);
    EXPECT_EQ(g["ext_ml_gang_generation"], 11);  // 1, +6 growing, +4 leaving
    ranks.insert(g["ext_ml_gang_rank"].get<int>());
  }
  EXPECT_EQ(ranks, (std::set<int>{0, 1, 2, 3}));

  // The freed nodes start the reserved gang; the elastic one keeps its four.
  std::set<int> hi_on;
  ASSERT_TRUE(wait_until([&] {
    for (const auto& [n, d] : told)
      for (const auto& got : fetch(n))
        if (got["id"] == hi) hi_on.insert(n);
    return info(hi)["state"] == "active" && hi_on.size() == 4;
  }, 10)) << info(hi).dump();
  EXPECT_EQ(members(el), 4);

  // It ends: the elastic gang grows back to 8 on the nodes it gave up.
  for (const int n : hi_on) ASSERT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", hi}, {"worker_id", worker(n)}}).status, 200);
  ASSERT_TRUE(wait_until([&] {
    for (const int n : hi_on) fetch(n);
    return members(el) == 8;
  }, 10));
  const auto g = gang_of(beat(1, {el}), el);
  EXPECT_EQ(g["ext_ml_gang_generation"], 15);
  const auto resized = api.get("/ojs/v1/events?queues=sh-el&types=job.gang_resized").body["events"];
  int left = 0;
  for (const auto& e : resized) left += e["data"].value("reason", "") == "left" ? 1 : 0;
  EXPECT_EQ(left, 4) << resized.dump();
}

// An elastic gang that came first does not keep every node: an equal one that
// arrives later takes members above the first one's share (they leave, the first
// runs on smaller), enough to start at its minimum.
TEST_F(ElasticShrink, AnEqualElasticGangThatWaitsTakesMembersAboveTheFirstOnesShare) {
  const auto a = api.push(gang_job("sh-el", {{"min_size", 2}, {"max_size", 8}}));
  ASSERT_NO_FATAL_FAILURE(grow_to_eight(a));

  // b, of the same class, waits: two of a's members (never rank 0) are told to leave.
  const auto b = api.push(gang_job("sh-el", {{"min_size", 2}, {"max_size", 8}}));
  std::map<int, json> told;
  ASSERT_TRUE(wait_until([&] {
    for (int n = 1; n <= 8; ++n) {
      const auto reply = beat(n, {a});  // named: a range-for over a temporary's member reads freed memory
      for (const auto& d : reply["job_directives"]) told[n] = d;
    }
    return told.size() >= 2;
  }, 10));
  ASSERT_EQ(told.size(), 2u) << "b needs two to start";
  EXPECT_FALSE(told.count(1)) << "rank 0, the rendezvous, stays";
  for (const auto& [n, d] : told) {
    EXPECT_EQ(d["job_id"], a);
    EXPECT_EQ(d["action"], "preempt");
    EXPECT_EQ(d["preempted_for"], b);
  }
  for (const auto& [n, d] : told) {
    const auto nack = api.post("/ojs/v1/workers/nack", {{"job_id", a}, {"worker_id", worker(n)}, {"requeue", true},
                                                        {"error", {{"code", "preempted"}, {"message", "leaving"}}}});
    ASSERT_EQ(nack.status, 200) << nack.body.dump();
  }
  EXPECT_EQ(members(a), 6);
  EXPECT_EQ(info(a)["state"], "active");

  // The freed nodes start b at its minimum; a runs on with six.
  std::set<int> b_on;
  ASSERT_TRUE(wait_until([&] {
    for (const auto& [n, d] : told)
      for (const auto& got : fetch(n))
        if (got["id"] == b) b_on.insert(n);
    return info(b)["state"] == "active" && b_on.size() == 2;
  }, 10)) << info(b).dump();
  EXPECT_EQ(members(a), 6);
}

// The queue's budget, not the nodes, keeps a higher-class job waiting: members of an
// elastic gang leave to give back their GPUs, and the gang runs on smaller.
TEST_F(ElasticShrink, BudgetPreemptionShrinksAnElasticGangInsteadOfStoppingIt) {
  const auto put = api.call("PUT", "/ojs/v1/admin/queues/sh-el/config", {{"budgets", {{"max_total_gpus", 32}}}});
  ASSERT_EQ(put.status, 200) << put.body.dump();
  const auto el = api.push(gang_job("sh-el", {{"min_size", 2}, {"max_size", 8}}, {{"ext_ml_priority_class", "spot"}}));
  ASSERT_NO_FATAL_FAILURE(grow_to_eight(el));

  // A reserved 4-GPU job fits worker 9, but the budget's 32 GPUs are the gang's.
  const auto hi = api.push(ml_job("sh-el", {{"ext_ml_gpu_count", 4}, {"ext_ml_priority_class", "reserved"}}));
  ASSERT_EQ(fetch(9).size(), 0u);
  std::map<int, json> told;
  ASSERT_TRUE(wait_until([&] {
    for (int n = 1; n <= 8; ++n) {
      const auto reply = beat(n, {el});
      for (const auto& d : reply["job_directives"]) told[n] = d;
    }
    return !told.empty();
  }, 10));
  ASSERT_EQ(told.size(), 1u) << "one member's 4 GPUs are enough";
  const int leaver = told.begin()->first;
  EXPECT_NE(leaver, 1) << "rank 0, the rendezvous, stays";
  EXPECT_EQ(told.begin()->second["preempted_for"], hi);
  const auto nack = api.post("/ojs/v1/workers/nack", {{"job_id", el}, {"worker_id", worker(leaver)}, {"requeue", true},
                                                      {"error", {{"code", "preempted"}, {"message", "leaving"}}}});
  ASSERT_EQ(nack.status, 200) << nack.body.dump();
  EXPECT_EQ(members(el), 7);
  EXPECT_EQ(info(el)["state"], "active");
  const auto got = fetch(9);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["id"], hi);
}

// A member told to leave whose worker's heartbeat no longer lists the job has left:
// the gang shrinks at once, not at the leave's deadline, and no NACK is needed.
TEST_F(ElasticShrink, AHeartbeatThatNoLongerListsTheJobEndsTheLeave) {
  const auto put = api.call("PUT", "/ojs/v1/admin/queues/sh-el/config", {{"budgets", {{"max_total_gpus", 32}}}});
  ASSERT_EQ(put.status, 200) << put.body.dump();
  const auto el = api.push(gang_job("sh-el", {{"min_size", 2}, {"max_size", 8}},
                                     {{"ext_ml_priority_class", "spot"}, {"ext_ml_preemption_grace_period_s", 300}}));
  ASSERT_NO_FATAL_FAILURE(grow_to_eight(el));
  const auto hi = api.push(ml_job("sh-el", {{"ext_ml_gpu_count", 4}, {"ext_ml_priority_class", "reserved"}}));
  ASSERT_EQ(fetch(9).size(), 0u);
  int leaver = 0;
  ASSERT_TRUE(wait_until([&] {
    for (int n = 1; n <= 8 && leaver == 0; ++n) {
      const auto reply = beat(n, {el});
      if (!reply["job_directives"].empty()) leaver = n;
    }
    return leaver != 0;
  }, 10));
  // A count without ids names no job: the leave goes on.
  auto r = api.post("/ojs/v1/workers/heartbeat", {{"worker_id", worker(leaver)}});
  ASSERT_EQ(r.status, 200) << r.body.dump();
  EXPECT_EQ(r.body["job_directives"].size(), 1u);
  EXPECT_EQ(members(el), 8);
  // Its process stopped: the next heartbeat lists nothing, and the member has left.
  r = api.post("/ojs/v1/workers/heartbeat", {{"worker_id", worker(leaver)}, {"active_jobs", json::array()}});
  ASSERT_EQ(r.status, 200) << r.body.dump();
  EXPECT_TRUE(r.body["job_directives"].empty()) << r.body.dump();
  EXPECT_EQ(members(el), 7);
  EXPECT_EQ(info(el)["state"], "active");
  const auto got = fetch(9);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["id"], hi);
  // A late NACK of the member changes nothing.
  const auto nack = api.post("/ojs/v1/workers/nack", {{"job_id", el}, {"worker_id", worker(leaver)}, {"requeue", true},
                                                      {"error", {{"code", "preempted"}, {"message", "leaving"}}}});
  EXPECT_LT(nack.status, 500) << nack.body.dump();
  EXPECT_EQ(members(el), 7);
  EXPECT_EQ(info(el)["state"], "active");
}
