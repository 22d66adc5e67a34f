// Cancel and kill reach the job's process, with a real broker, Redis and worker
// agent running real subprocesses: a cancel gives the process SIGTERM and its
// grace, a kill SIGKILL at once (also cutting a cancel's grace short), and the
// cancelled job's GPU stays charged to its worker, so no other job is placed on
// it, until the worker reports the process gone or is declared lost.
// ctest-timeout: 300
#include <gtest/gtest.h>
#include <signal.h>

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

// One simulated GPU: every GPU job of these tests wants device 0.
std::string one_gpu_node(const std::string& dir) {
  const std::string path = dir + "/one-gpu.json";
  std::ofstream(path) << json{{"simulate", true},
                              {"accelerator", "gpu"},
                              {"gpu", {{"type", "nvidia-a100"}, {"count", 1}, {"memory_gb", 80}}},
                              {"devices", json::array({{{"index", 0}}})},
                              {"cpu_cores", 8},
                              {"memory_gb", 64}}
                              .dump();
  return path;
}

// ml.hold writes its pid, and on SIGTERM writes <id>.term and runs `on_term`;
// ml.quick finishes at once. Concurrency 2: the agent keeps fetching while a job stops.
ChildProcess start_agent(const std::string& broker_url, const std::string& id, const std::string& dir,
                         const std::string& on_term) {
  const std::string hold = "ml.hold=echo $$ > " + dir + "/$OJS_JOB_ID.pid; trap 'touch " + dir + "/$OJS_JOB_ID.term; " +
                           on_term + "' TERM; while :; do sleep 0.05; done";
  return ChildProcess({binary_path("worker/worker"), "--broker", broker_url, "--worker-id", id, "--queues", "stop",
                       "--capabilities-file", one_gpu_node(dir), "--poll-interval-ms", "100", "--heartbeat-interval-s",
                       "1", "--log-level", "warn", "--concurrency", "2", "--command", hold, "--command",
                       "ml.quick=echo '{}'", "--work-dir", make_temp_dir("stop-" + id)});
}

json gpu_job(const std::string& type) {
  json job = ml_job("stop", {{"ext_ml_gpu_count", 1}, {"ext_ml_preemption_grace_period_s", 600}});
  job["type"] = type;
  return job;
}

bool exists(const std::string& path) { return std::filesystem::exists(path); }

// The pid the job wrote once it runs (-1 if it never did).
pid_t pid_of(const std::string& dir, const std::string& job_id) {
  const std::string path = dir + "/" + job_id + ".pid";
  if (!wait_until([&] { return exists(path); })) return -1;
  pid_t pid = -1;
  std::ifstream(path) >> pid;
  return pid;
}

bool alive(pid_t pid) { return pid > 0 && ::kill(pid, 0) == 0; }

json worker_listed(Api& api, const std::string& id) {
  const auto listing = api.get("/ojs/v1/admin/workers");
  for (const auto& w : listing.body["items"])
    if (w["id"] == id) return w;
  return nullptr;
}

std::string state_of(Api& api, const std::string& id) { return api.get("/ojs/v1/jobs/" + id).body["job"]["state"]; }

RunResult ojsctl(const std::string& url, const std::string& verb, const std::string& id) {
  return run_process({binary_path("ojsctl/ojsctl"), "--url", url, verb, id}, 60);
}

// Job `id` runs on a worker whose agent then dies (SIGKILL: its job runs on, orphaned,
// *orphan its pid), and is cancelled.
void cancel_after_agent_died(Api& api, const std::string& broker_url, const std::string& worker, const std::string& dir,
                             const std::string& id, pid_t* orphan) {
  auto agent = start_agent(broker_url, worker, dir, "true");
  ASSERT_EQ(wait_for_state(api, id, "active")["state"], "active");
  *orphan = pid_of(dir, id);
  agent.signal(SIGKILL);
  ASSERT_TRUE(agent.exited_within(30s));
  ASSERT_EQ(api.call("DELETE", "/ojs/v1/jobs/" + id).status, 200);
}

}  // namespace

TEST(CancelReachesProcess, CancelGivesTheGraceAndTheGpuWaitsUntilTheProcessIsGone) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  const std::string dir = make_temp_dir("cancel-grace");
  const std::string gate = dir + "/gate";
  // On SIGTERM the job "saves its state" until the test opens the gate, then exits 0.
  auto agent = start_agent(broker.url(), "stopper", dir, "while [ ! -f " + gate + " ]; do sleep 0.05; done; exit 0");
  const auto a = api.push(gpu_job("ml.hold"));
  ASSERT_EQ(wait_for_state(api, a, "active")["state"], "active");
  const pid_t pid = pid_of(dir, a);
  ASSERT_TRUE(alive(pid));

  const auto cancelled = ojsctl(broker.url(), "cancel", a);
  ASSERT_EQ(cancelled.exit_code, 0) << cancelled.output;
  EXPECT_EQ(state_of(api, a), "cancelled");
  ASSERT_TRUE(wait_until([&] { return exists(dir + "/" + a + ".term"); })) << "the cancel never reached the process (SIGTERM)";

  // In its grace the process still runs and its GPU is still charged to the worker:
  // a job for that GPU waits, though the agent fetches (it has a free slot).
  const auto b = api.push(gpu_job("ml.quick"));
  EXPECT_EQ(worker_listed(api, "stopper")["gpus_in_use"], 1);
  EXPECT_FALSE(wait_until([&] { return state_of(api, b) != "available"; }, 3))
      << "job " << b << " was placed on the GPU of a cancelled job whose process still runs: "
      << api.get("/ojs/v1/jobs/" + b).body.dump();
  EXPECT_TRUE(alive(pid)) << "the process was killed inside its grace period";

  std::ofstream(gate) << "go";
  EXPECT_TRUE(wait_until([&] { return !alive(pid); })) << "the process did not end";
  const auto done = wait_for_state(api, b, "completed");
  ASSERT_EQ(done["state"], "completed") << done.dump();
  EXPECT_EQ(done["ext_ml_assigned_devices"], json::array({0}));
  EXPECT_EQ(state_of(api, a), "cancelled");  // the worker's report of the process gone leaves it cancelled
  EXPECT_EQ(worker_listed(api, "stopper")["gpus_in_use"], 0);
}

TEST(CancelReachesProcess, KillStopsAtOnceAndCutsACancelsGraceShort) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  const std::string dir = make_temp_dir("cancel-kill");
  // This job shrugs off SIGTERM: only SIGKILL (a kill, or the end of its 600 s grace) stops it.
  auto agent = start_agent(broker.url(), "killer", dir, "true");

  const auto a = api.push(gpu_job("ml.hold"));
  ASSERT_EQ(wait_for_state(api, a, "active")["state"], "active");
  const pid_t a_pid = pid_of(dir, a);
  ASSERT_EQ(ojsctl(broker.url(), "cancel", a).exit_code, 0);
  ASSERT_TRUE(wait_until([&] { return exists(dir + "/" + a + ".term"); })) << "the cancel never reached the process";
  EXPECT_TRUE(alive(a_pid));
  const auto killed = ojsctl(broker.url(), "kill", a);  // the cancelled job, still stopping: now SIGKILL
  ASSERT_EQ(killed.exit_code, 0) << killed.output;
  EXPECT_TRUE(wait_until([&] { return !alive(a_pid); })) << "kill did not cut the grace short";

  // A running job killed outright: SIGKILL, never SIGTERM; then the GPU serves the next job.
  const auto c = api.push(gpu_job("ml.hold"));
  ASSERT_EQ(wait_for_state(api, c, "active")["state"], "active") << "the killed job's GPU was not given back";
  const pid_t c_pid = pid_of(dir, c);
  ASSERT_TRUE(alive(c_pid));
  const auto r = api.post("/ojs/v1/jobs/" + c + "/kill", json::object());
  ASSERT_EQ(r.status, 200) << r.body.dump();
  EXPECT_EQ(r.body["job"]["state"], "cancelled");
  EXPECT_TRUE(wait_until([&] { return !alive(c_pid); })) << "kill did not stop the process";
  EXPECT_FALSE(exists(dir + "/" + c + ".term")) << "a kill sent SIGTERM first";
  const auto b = api.push(gpu_job("ml.quick"));
  EXPECT_EQ(wait_for_state(api, b, "completed")["state"], "completed");

  // A finished job cannot be killed.
  const auto again = api.post("/ojs/v1/jobs/" + b + "/kill", json::object());
  EXPECT_EQ(again.status, 409) << again.body.dump();
}

// The agent dies (SIGKILL) while its job runs on; the job is cancelled. A new run of
// the worker does not know the job: it reports it gone, and the GPU serves again.
TEST(CancelReachesProcess, ARestartedWorkerReportsAJobItDoesNotRunGone) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  const std::string dir = make_temp_dir("cancel-restart");
  const auto a = api.push(gpu_job("ml.hold"));
  pid_t orphan = -1;
  ASSERT_NO_FATAL_FAILURE(cancel_after_agent_died(api, broker.url(), "restarted", dir, a, &orphan));
  EXPECT_EQ(worker_listed(api, "restarted")["gpus_in_use"], 1) << "the cancelled job's GPU was freed before any report";
  auto agent = start_agent(broker.url(), "restarted", dir, "true");
  const auto b = api.push(gpu_job("ml.quick"));
  EXPECT_EQ(wait_for_state(api, b, "completed")["state"], "completed");
  EXPECT_EQ(state_of(api, a), "cancelled");
  if (orphan > 0) ::kill(-orphan, SIGKILL);  // the job the dead agent left behind
}

// The agent dies and never comes back: once the broker declares the worker lost
// (--worker-dead-after-ms), the cancelled job stops holding its GPU.
TEST(CancelReachesProcess, ALostWorkerStopsHoldingTheCancelledJobsGpu) {
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--worker-dead-after-ms", "1500"}};
  Api api{broker.url()};
  const std::string dir = make_temp_dir("cancel-lost");
  const auto a = api.push(gpu_job("ml.hold"));
  pid_t orphan = -1;
  ASSERT_NO_FATAL_FAILURE(cancel_after_agent_died(api, broker.url(), "vanished", dir, a, &orphan));
  EXPECT_EQ(worker_listed(api, "vanished")["gpus_in_use"], 1);
  EXPECT_TRUE(wait_until([&] { return worker_listed(api, "vanished")["gpus_in_use"] == 0; }, 60))
      << worker_listed(api, "vanished").dump();
  EXPECT_EQ(state_of(api, a), "cancelled");
  if (orphan > 0) ::kill(-orphan, SIGKILL);
}
