// Worker lifecycle with the real worker agent: a terminate directive
// ends with the worker's exit (a restart under the same id runs), directives on an
// unknown worker are 404, and drain quiets a worker then terminates it once idle.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "support/child_process.hpp"
#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;
using namespace std::chrono_literals;

namespace {

// The real agent on a CPU node serving queue "life".
ChildProcess start_agent(const std::string& broker_url, const std::string& id, const std::string& command) {
  return ChildProcess({binary_path("worker/worker"), "--broker", broker_url, "--worker-id", id, "--queues", "life",
                       "--capabilities-file", std::string(OJS_SOURCE_DIR) + "/examples/workers/cpu-node.json",
                       "--poll-interval-ms", "100", "--heartbeat-interval-s", "1", "--log-level", "warn",
                       "--concurrency", "1", "--command", command, "--work-dir", make_temp_dir("life-" + id)});
}

json worker_listed(Api& api, const std::string& id) {
  // The reply is named: a range-for over a member of the temporary reply reads freed memory.
  const auto listing = api.get("/ojs/v1/admin/workers");
  for (const auto& w : listing.body["workers"])
    if (w["id"] == id) return w;
  return nullptr;
}

}  // namespace

TEST(WorkerLifecycle, WorkerRestartedAfterTerminateRuns) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  const std::string command = "ml.*=echo '{\"ok\": true}'";
  {
    auto first = start_agent(broker.url(), "life-1", command);
    const auto id = api.push(ml_job("life", json::object()));
    ASSERT_EQ(wait_for_state(api, id, "completed")["state"], "completed");
    ASSERT_EQ(api.post("/ojs/v1/admin/workers/life-1/terminate", json::object()).status, 200);
    ASSERT_TRUE(first.exited_within(30s)) << "the agent told terminate did not exit";
  }
  // The same worker id, a new process: it is told to run, not terminate again.
  auto second = start_agent(broker.url(), "life-1", command);
  const auto id = api.push(ml_job("life", json::object()));
  const auto job = wait_for_state(api, id, "completed");
  ASSERT_EQ(job["state"], "completed") << job.dump();
  EXPECT_EQ(job["worker_id"], "life-1");
  EXPECT_EQ(worker_listed(api, "life-1")["state"], "running");
}

TEST(WorkerLifecycle, TerminateStaysForTheIncarnationItReached) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  const json run_a = {{"worker_id", "sdk-1"}, {"started_at", "2026-11-26T08:00:00Z"}, {"pid", 41}};
  ASSERT_EQ(api.post("/ojs/v1/workers/heartbeat", run_a).body["state"], "running");
  ASSERT_EQ(api.post("/ojs/v1/admin/workers/sdk-1/terminate", json::object()).status, 200);
  EXPECT_EQ(api.post("/ojs/v1/workers/heartbeat", run_a).body["state"], "terminate");
  EXPECT_EQ(api.post("/ojs/v1/workers/heartbeat", run_a).body["state"], "terminate");  // still draining: told again
  json run_b = run_a;
  run_b["started_at"] = "2026-11-26T08:05:00Z";
  run_b["pid"] = 42;
  EXPECT_EQ(api.post("/ojs/v1/workers/heartbeat", run_b).body["state"], "running");
  // A malformed incarnation field is named.
  auto bad = api.post("/ojs/v1/workers/heartbeat", {{"worker_id", "sdk-1"}, {"started_at", "yesterday"}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.body["error"]["details"]["field"], "started_at");
}

TEST(WorkerLifecycle, DirectivesOnAnUnknownWorkerAre404AndCreateNothing) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  for (const std::string verb : {"quiet", "terminate", "resume", "drain"}) {
    const auto r = api.post("/ojs/v1/admin/workers/ghost/" + verb, json::object());
    EXPECT_EQ(r.status, 404) << verb << ": " << r.body.dump();
    EXPECT_EQ(r.body["error"]["code"], "not_found") << verb;
  }
  EXPECT_TRUE(worker_listed(api, "ghost").is_null());
  EXPECT_TRUE(api.get("/ojs/v1/admin/workers").body["workers"].empty());
}

TEST(WorkerLifecycle, DrainQuietsThenTerminatesOnceIdle) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  const std::string gate = make_temp_dir("drain-gate") + "/go";
  // ml.hold runs until the test opens the gate; everything else finishes at once.
  auto agent = start_agent(broker.url(), "drainee", "ml.hold=while [ ! -f " + gate + " ]; do sleep 0.05; done; echo '{}'");
  json held = ml_job("life", json::object());
  held["type"] = "ml.hold";
  const auto running = api.push(held);
  ASSERT_EQ(wait_for_state(api, running, "active")["state"], "active");

  const auto drained = run_process({binary_path("ojsctl/ojsctl"), "--url", broker.url(), "workers", "drain", "drainee"}, 60);
  ASSERT_EQ(drained.exit_code, 0) << drained.output;
  EXPECT_EQ(worker_listed(api, "drainee")["state"], "drain");
  const auto waiting = api.push(held);  // pushed after the drain: never fetched by this worker
  EXPECT_FALSE(agent.exited_within(0ms)) << "the agent left while holding a job";

  std::ofstream(gate) << "go";
  ASSERT_EQ(wait_for_state(api, running, "completed")["state"], "completed");
  ASSERT_TRUE(agent.exited_within(30s)) << "the drained agent did not exit once idle";
  EXPECT_EQ(worker_listed(api, "drainee")["state"], "terminate");
  EXPECT_EQ(api.get("/ojs/v1/jobs/" + waiting).body["job"]["state"], "available");
}
