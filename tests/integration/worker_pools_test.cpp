// Worker pools and fair distribution across queues (ojs-fair-scheduling.md §5.2, §6,
// §7, §10) on a real broker and Redis, workers simulated by HTTP FETCH: the admin API
// (both body shapes, validation, roles), each strategy's order at FETCH, the pool's
// concurrency, the scheduling stats, ACK and NACK by job path, and Redis gone: 503.
// ctest-timeout: 300
#include <gtest/gtest.h>

#include <map>

#include "ojs/client/http_client.hpp"

#include "support/processes.hpp"
#include "support/role_tokens.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

void push_n(Api& api, const std::string& queue, int n) {
  json jobs = json::array();
  for (int i = 0; i < n; ++i) jobs.push_back({{"type", "pool.job"}, {"args", {i}}, {"options", {{"queue", queue}}}});
  const auto r = api.post("/ojs/v1/jobs/batch", {{"jobs", jobs}});
  ASSERT_EQ(r.status, 201) << r.body.dump();
}

// The queue each of `fetches` single-job FETCHes of the pool took a job from, ACKing each.
std::vector<std::string> serve(Api& worker, const std::string& pool, int fetches, const std::string& worker_id) {
  std::vector<std::string> from;
  for (int i = 0; i < fetches; ++i) {
    const auto r = worker.post("/ojs/v1/workers/fetch", {{"pool", pool}, {"worker_id", worker_id}});
    EXPECT_EQ(r.status, 200) << r.body.dump();
    if (r.body["jobs"].empty()) break;
    const auto& job = r.body["jobs"][0];
    from.push_back(job["queue"]);
    EXPECT_EQ(worker.post("/ojs/v1/workers/ack", {{"job_id", job["id"]}, {"worker_id", worker_id}}).status, 200);
  }
  return from;
}

std::map<std::string, int> tally(const std::vector<std::string>& from) {
  std::map<std::string, int> n;
  for (const auto& q : from) ++n[q];
  return n;
}

}  // namespace

class WorkerPools : public ::testing::Test, public RoleTokenBroker {
 protected:
  WorkerPools() : RoleTokenBroker("pools") {}
};

TEST_F(WorkerPools, AdminCreatesReadsListsAndDeletesPoolsInBothShapes) {
  // The public suite's shape: queues as an object with weights inside.
  const auto created = admin.call("PUT", "/ojs/v1/admin/pools/gpu-pool",
                                  {{"name", "gpu-pool"}, {"strategy", "weighted"},
                                   {"queues", {{"high-priority", {{"weight", 70}}}, {"low-priority", {{"weight", 30}}}}}});
  ASSERT_EQ(created.status, 201) << created.body.dump();
  EXPECT_EQ(created.body["pool"]["name"], "gpu-pool");
  EXPECT_EQ(created.body["pool"]["strategy"], "weighted");
  EXPECT_EQ(created.body["pool"]["queues"], json({"high-priority", "low-priority"}));
  EXPECT_EQ(created.body["pool"]["weights"], json({{"high-priority", 70}, {"low-priority", 30}}));

  // The spec's shape, replacing it: 200, created_at kept.
  const auto updated = admin.call("PUT", "/ojs/v1/admin/pools/gpu-pool",
                                  {{"queues", {"critical", "payments"}}, {"concurrency", 20}, {"strategy", "strict"}});
  ASSERT_EQ(updated.status, 200) << updated.body.dump();
  EXPECT_EQ(updated.body["pool"]["queues"], json({"critical", "payments"}));
  EXPECT_EQ(updated.body["pool"]["concurrency"], 20);
  EXPECT_EQ(updated.body["pool"]["created_at"], created.body["pool"]["created_at"]);

  ASSERT_EQ(admin.call("PUT", "/ojs/v1/admin/pools/cpu-pool", {{"queues", {"default"}}}).status, 201);
  const auto listed = admin.get("/ojs/v1/admin/pools");
  ASSERT_EQ(listed.status, 200) << listed.body.dump();
  ASSERT_EQ(listed.body["items"].size(), 2u);
  EXPECT_EQ(listed.body["items"][0]["name"], "cpu-pool");
  EXPECT_EQ(listed.body["items"][0]["strategy"], "round-robin") << "the spec's default";
  EXPECT_EQ(listed.body["items"][0]["active_workers"], 0);
  EXPECT_EQ(listed.body["items"][0]["active_jobs"], 0);

  // active_workers and active_jobs: a worker fetching from the pool holds a job.
  push_n(team_a, "default", 1);
  ASSERT_EQ(pool.post("/ojs/v1/workers/fetch", {{"pool", "cpu-pool"}, {"worker_id", "pool-w1"}}).body["jobs"].size(), 1u);
  const auto one = admin.get("/ojs/v1/admin/pools/cpu-pool");
  ASSERT_EQ(one.status, 200);
  EXPECT_EQ(one.body["pool"]["active_workers"], 1);
  EXPECT_EQ(one.body["pool"]["active_jobs"], 1);

  const auto removed = admin.call("DELETE", "/ojs/v1/admin/pools/cpu-pool");
  EXPECT_EQ(removed.status, 200) << removed.body.dump();
  EXPECT_EQ(removed.body["pool"]["name"], "cpu-pool");
  EXPECT_EQ(admin.get("/ojs/v1/admin/pools/cpu-pool").status, 404);
  EXPECT_EQ(admin.call("DELETE", "/ojs/v1/admin/pools/cpu-pool").status, 404);
  const auto gone = pool.post("/ojs/v1/workers/fetch", {{"pool", "cpu-pool"}, {"worker_id", "pool-w1"}});
  EXPECT_EQ(gone.status, 404) << "a FETCH naming a deleted pool";
  EXPECT_EQ(gone.body["error"]["details"]["pool"], "cpu-pool");
}

TEST_F(WorkerPools, BadPoolsAreRefusedNamingTheFieldAndTheRule) {
  const std::vector<std::pair<json, std::string>> bad = {
      {json::object(), "queues"},
      {{{"queues", json::array()}}, "queues"},
      {{{"queues", {"Bad Name"}}}, "queues"},
      {{{"queues", {"a", "a"}}}, "queues"},
      {{{"queues", {"a"}}, {"strategy", "fifo"}}, "strategy"},
      {{{"queues", {"a"}}, {"weights", {{"b", 2}}}}, "weights.b"},
      {{{"queues", {"a"}}, {"weights", {{"a", 0}}}}, "weights.a"},
      {{{"queues", {"a"}}, {"concurrency", -1}}, "concurrency"},
      {{{"queues", {{"a", {{"weight", "x"}}}}}}, "queues.a.weight"},
      {{{"queues", {{"a", {{"weight", 1}}}}}, {"weights", {{"a", 1}}}}, "weights"},
      {{{"queues", {"a"}}, {"name", "other"}}, "name"},
      {{{"queues", {"a"}}, {"isolated", true}}, "isolated"},
  };
  for (const auto& [body, field] : bad) {
    const auto r = admin.call("PUT", "/ojs/v1/admin/pools/p1", body);
    EXPECT_EQ(r.status, 400) << body.dump() << " " << r.body.dump();
    EXPECT_NE(r.body.dump().find(field), std::string::npos) << body.dump() << " should name " << field << ": " << r.body.dump();
  }
  EXPECT_EQ(admin.call("PUT", "/ojs/v1/admin/pools/Bad_Name", {{"queues", {"a"}}}).status, 400);
  const auto no_queues = pool.post("/ojs/v1/workers/fetch", {{"worker_id", "pool-w1"}});
  EXPECT_EQ(no_queues.status, 400);
  EXPECT_EQ(pool.post("/ojs/v1/workers/fetch", {{"pool", 7}, {"worker_id", "pool-w1"}}).status, 400);
}

TEST_F(WorkerPools, OnlyAdminsManagePoolsAndReadTheStats) {
  EXPECT_EQ(team_a.call("PUT", "/ojs/v1/admin/pools/p1", {{"queues", {"a"}}}).status, 403);
  EXPECT_EQ(node_a.get("/ojs/v1/admin/pools").status, 403);
  EXPECT_EQ(node_a.get("/ojs/v1/admin/scheduling/stats").status, 403);
  EXPECT_EQ(admin.call("PUT", "/ojs/v1/admin/pools/p1", {{"queues", {"a"}}}).status, 201);
  EXPECT_EQ(team_a.call("DELETE", "/ojs/v1/admin/pools/p1").status, 403);
}

TEST_F(WorkerPools, WeightedThreeToOneGivesThreeToOneDispatches) {
  push_n(team_a, "wq-big", 40);
  push_n(team_a, "wq-small", 40);
  ASSERT_EQ(admin.call("PUT", "/ojs/v1/admin/pools/weighted",
                       {{"queues", {"wq-small", "wq-big"}}, {"weights", {{"wq-big", 3}, {"wq-small", 1}}}, {"strategy", "weighted"}})
                .status,
            201);
  const auto n = tally(serve(pool, "weighted", 40, "pool-w1"));
  EXPECT_NEAR(n.at("wq-big"), 30, 2) << "3:1 over 40 FETCHes of two backlogged queues";
  EXPECT_NEAR(n.at("wq-small"), 10, 2);

  // The same counts answer the scheduling stats, in both shapes.
  const auto stats = admin.get("/ojs/v1/admin/scheduling/stats");
  ASSERT_EQ(stats.status, 200) << stats.body.dump();
  EXPECT_EQ(stats.body["window"], "PT1M");
  EXPECT_EQ(stats.body["stats"]["window"], "PT1M");
  std::map<std::string, json> by_name;
  for (const auto& q : stats.body["stats"]["queues"]) by_name[q["name"]] = q;
  EXPECT_EQ(stats.body["queues"], stats.body["stats"]["queues"]);
  // (a minute that turned during the run counts the one before as the part still inside the window)
  EXPECT_NEAR(by_name["wq-big"]["dispatch_count_1m"].get<double>(), n.at("wq-big"), 1);
  EXPECT_NEAR(by_name["wq-small"]["dispatch_count_1m"].get<double>(), n.at("wq-small"), 1);
  EXPECT_NEAR(by_name["wq-big"]["dispatch_ratio_1m"].get<double>(), 0.75, 0.06);
  EXPECT_EQ(by_name["wq-big"]["active_jobs"], 0);

  // This broker's dispatch counter, by queue and pool.
  ojs::HttpClient http({broker.url(), "admin-token"});
  const auto metrics = http.get("/metrics").body;
  for (const auto& [queue, count] : n) {
    const auto line = "ojs_scheduling_dispatch_total{queue=\"" + queue + "\",pool=\"weighted\"} " + std::to_string(count);
    EXPECT_NE(metrics.find(line + "\n"), std::string::npos) << "missing: " << line;
  }
}

TEST_F(WorkerPools, StrictDrainsTheFirstQueueFirstWhateverTheWorkerLists) {
  push_n(team_a, "sq-low", 3);
  push_n(team_a, "sq-high", 3);
  ASSERT_EQ(admin.call("PUT", "/ojs/v1/admin/pools/strict", {{"queues", {"sq-high", "sq-low"}}, {"strategy", "strict"}}).status, 201);
  // §5.2: the pool's order wins over the worker's own.
  std::vector<std::string> from;
  for (int i = 0; i < 6; ++i) {
    const auto r = pool.post("/ojs/v1/workers/fetch", {{"pool", "strict"}, {"queues", {"sq-low", "sq-high"}}, {"worker_id", "pool-w1"}});
    ASSERT_EQ(r.body["jobs"].size(), 1u) << r.body.dump();
    from.push_back(r.body["jobs"][0]["queue"]);
  }
  EXPECT_EQ(from, (std::vector<std::string>{"sq-high", "sq-high", "sq-high", "sq-low", "sq-low", "sq-low"}));
}

TEST_F(WorkerPools, RoundRobinRotatesAndSkipsAnEmptyQueue) {
  push_n(team_a, "rq-a", 4);
  push_n(team_a, "rq-b", 4);
  push_n(team_a, "rq-c", 1);
  ASSERT_EQ(admin.call("PUT", "/ojs/v1/admin/pools/rr", {{"queues", {"rq-a", "rq-b", "rq-c"}}}).status, 201);
  const auto from = serve(pool, "rr", 7, "pool-w1");
  EXPECT_EQ(from, (std::vector<std::string>{"rq-a", "rq-b", "rq-c", "rq-a", "rq-b", "rq-a", "rq-b"}));
  // One FETCH of several jobs interleaves the queues too.
  push_n(team_a, "rq-a", 2);
  push_n(team_a, "rq-b", 2);
  const auto many = pool.post("/ojs/v1/workers/fetch", {{"pool", "rr"}, {"count", 4}, {"worker_id", "pool-w2"}});
  ASSERT_EQ(many.body["jobs"].size(), 4u) << many.body.dump();
  std::map<std::string, int> n;
  for (const auto& j : many.body["jobs"]) ++n[j["queue"]];
  EXPECT_EQ(n["rq-a"], 2);
  EXPECT_EQ(n["rq-b"], 2);
}

TEST_F(WorkerPools, LeastLoadedTakesTheDeepestBacklogAndConcurrencyCapsThePool) {
  push_n(team_a, "lq-shallow", 2);
  push_n(team_a, "lq-deep", 5);
  ASSERT_EQ(admin.call("PUT", "/ojs/v1/admin/pools/ll",
                       {{"queues", {"lq-shallow", "lq-deep"}}, {"strategy", "least-loaded"}, {"concurrency", 4}})
                .status,
            201);
  std::vector<std::string> from;
  for (int i = 0; i < 6; ++i) {
    const auto r = pool.post("/ojs/v1/workers/fetch", {{"pool", "ll"}, {"worker_id", "pool-w1"}});
    ASSERT_EQ(r.status, 200) << r.body.dump();
    if (!r.body["jobs"].empty()) from.push_back(r.body["jobs"][0]["queue"]);
  }
  // 5-2: deep, deep, deep (2-2: listed order) shallow; then the pool runs 4 jobs: no more.
  EXPECT_EQ(from, (std::vector<std::string>{"lq-deep", "lq-deep", "lq-deep", "lq-shallow"}));
}

TEST_F(WorkerPools, AckAndNackByJobPathAreTheWorkersAckAndNack) {
  const auto acked = team_a.push({{"type", "path.ack"}, {"args", json::array()}, {"options", {{"queue", "path-q"}}}});
  const auto nacked = team_a.push({{"type", "path.nack"}, {"args", json::array()},
                                   {"options", {{"queue", "path-q"}, {"retry", {{"max_attempts", 3}}}}}});
  ASSERT_EQ(node_a.post("/ojs/v1/workers/fetch", {{"queues", {"path-q"}}, {"count", 2}, {"worker_id", "node-a"}}).body["jobs"].size(), 2u);
  // A body job_id other than the path's is refused, naming it.
  const auto other = node_a.post("/ojs/v1/jobs/" + acked + "/ack", {{"worker_id", "node-a"}, {"job_id", nacked}});
  EXPECT_EQ(other.status, 400);
  EXPECT_NE(other.body.dump().find("job_id"), std::string::npos);
  EXPECT_EQ(team_a.post("/ojs/v1/jobs/" + acked + "/ack", {{"worker_id", "node-a"}}).status, 403) << "workers' route";

  const auto ack = node_a.post("/ojs/v1/jobs/" + acked + "/ack", {{"worker_id", "node-a"}, {"result", {{"ok", true}}}});
  ASSERT_EQ(ack.status, 200) << ack.body.dump();
  EXPECT_EQ(ack.body["job"]["state"], "completed");
  EXPECT_EQ(ack.body["acknowledged"], true);
  const auto nack = node_a.post("/ojs/v1/jobs/" + nacked + "/nack",
                                {{"worker_id", "node-a"}, {"error", {{"code", "handler_error"}, {"message", "transient"}}}});
  ASSERT_EQ(nack.status, 200) << nack.body.dump();
  EXPECT_EQ(nack.body["job"]["state"], "retryable");
  EXPECT_EQ(node_a.post("/ojs/v1/jobs/" + acked + "/ack", {{"worker_id", "node-a"}, {"result", {{"ok", false}}}}).status, 409)
      << "another ACK of a finished job, as on workers/ack";
}

TEST_F(WorkerPools, RedisGoneIsA503) {
  ASSERT_EQ(admin.call("PUT", "/ojs/v1/admin/pools/p1", {{"queues", {"a"}}}).status, 201);
  redis.stop();
  EXPECT_EQ(admin.call("PUT", "/ojs/v1/admin/pools/p1", {{"queues", {"a", "b"}}}).status, 503);
  EXPECT_EQ(admin.get("/ojs/v1/admin/pools").status, 503);
  EXPECT_EQ(admin.get("/ojs/v1/admin/pools/p1").status, 503);
  EXPECT_EQ(admin.get("/ojs/v1/admin/scheduling/stats").status, 503);
  EXPECT_EQ(pool.post("/ojs/v1/workers/fetch", {{"pool", "p1"}, {"worker_id", "pool-w1"}}).status, 503);
}
