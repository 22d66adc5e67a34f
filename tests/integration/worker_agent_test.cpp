// Two real worker agents with simulated capability files run real shell-command
// jobs end to end against a real broker and redis-server.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "support/child_process.hpp"
#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

// A worker agent process, stopped (SIGTERM, drain) by its destructor.
class WorkerAgent {
 public:
  WorkerAgent(const std::string& broker_url, const std::string& id, const std::string& caps_file,
              const std::vector<std::string>& extra)
      : process_(args(broker_url, id, caps_file, extra)) {}

 private:
  static std::vector<std::string> args(const std::string& broker_url, const std::string& id, const std::string& caps_file,
                                       const std::vector<std::string>& extra) {
    std::vector<std::string> args{binary_path("worker/worker"), "--broker", broker_url, "--worker-id", id, "--queues", "agents",
                                  "--capabilities-file", std::string(OJS_SOURCE_DIR) + "/examples/workers/" + caps_file,
                                  "--poll-interval-ms", "100", "--heartbeat-interval-s", "1", "--log-level", "warn",
                                  "--work-dir", make_temp_dir("agent-" + id)};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
  ChildProcess process_;
};

}  // namespace

TEST(WorkerAgents, TwoAgentsRunRealCommandsOnTheWorkersThatFit) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  // The job reports where it ran and which devices it was given.
  const std::string command = "ml.*=echo \"{\\\"node\\\": \\\"$OJS_WORKER_NODE\\\", \\\"cuda\\\": \\\"$CUDA_VISIBLE_DEVICES\\\"}\"";
  setenv("OJS_WORKER_NODE", "dgx", 1);
  WorkerAgent dgx{broker.url(), "dgx", "dgx-h100.json", {"--command", command, "--concurrency", "4"}};
  setenv("OJS_WORKER_NODE", "l4", 1);
  WorkerAgent l4{broker.url(), "l4", "l4-inference.json", {"--command", command + "; exit ${OJS_EXIT:-0}"}};

  const auto train = api.push(ml_job("agents", {{"ext_ml_gpu_type", "nvidia-h100"}, {"ext_ml_gpu_count", 4}, {"ext_ml_gpu_interconnect", "nvlink"}}));
  const auto infer = api.push(ml_job("agents", {{"ext_ml_gpu_type", "nvidia-l4"}, {"ext_ml_gpu_memory_gb", 16}}));
  const auto plain = api.push(ml_job("agents", json::object()));

  auto t = wait_for_state(api, train, "completed");
  ASSERT_EQ(t["state"], "completed") << t.dump();
  EXPECT_EQ(t["worker_id"], "dgx");
  EXPECT_EQ(t["result"]["node"], "dgx");
  EXPECT_EQ(t["ext_ml_assigned_devices"].size(), 4u);
  // CUDA_VISIBLE_DEVICES is the assignment, comma separated.
  std::string expected;
  for (const auto& d : t["ext_ml_assigned_devices"]) expected += (expected.empty() ? "" : ",") + std::to_string(d.get<int>());
  EXPECT_EQ(t["result"]["cuda"], expected);

  auto i = wait_for_state(api, infer, "completed");
  ASSERT_EQ(i["state"], "completed") << i.dump();
  EXPECT_EQ(i["worker_id"], "l4");
  EXPECT_EQ(wait_for_state(api, plain, "completed")["state"], "completed");
}

TEST(WorkerAgents, FailingCommandIsRetriedAndTimeoutEnforced) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  WorkerAgent cpu{broker.url(), "cpu", "cpu-node.json",
                  {"--command", "ml.fail=echo boom >&2; exit 3", "--command", "ml.slow=sleep 30"}};
  json failing = {{"type", "ml.fail"}, {"args", json::array()},
                  {"options", {{"queue", "agents"}, {"retry", {{"max_attempts", 2}, {"initial_interval", "PT0.1S"}, {"jitter", false}}}}}};
  const auto f = api.push(failing);
  auto fj = wait_for_state(api, f, "discarded");
  ASSERT_EQ(fj["state"], "discarded") << fj.dump();
  EXPECT_EQ(fj["attempt"], 2);
  ASSERT_EQ(fj["errors"].size(), 2u);
  EXPECT_EQ(fj["errors"][0]["code"], "exit_3");
  EXPECT_NE(fj["errors"][0].dump().find("boom"), std::string::npos) << "stderr tail belongs in the error";

  json slow = {{"type", "ml.slow"}, {"args", json::array()}, {"ext_ml_timeout_seconds", 1},
               {"options", {{"queue", "agents"}, {"retry", {{"max_attempts", 1}}}}}};
  const auto s = api.push(slow);
  auto sj = wait_for_state(api, s, "discarded");
  ASSERT_EQ(sj["state"], "discarded") << sj.dump();
  EXPECT_EQ(sj["error"]["code"], "timeout");
}

TEST(WorkerAgents, PreemptedJobCheckpointsReleasesAndResumes) {
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--preemption-interval-ms", "100", "--capacity-hold-ms", "5000"}};
  Api api{broker.url()};
  // A training script: resumes from $OJS_LAST_CHECKPOINT, checkpoints and exits on SIGTERM.
  const std::string dir = make_temp_dir("preempt-script");
  const std::string script = dir + "/train.sh";
  {
    std::ofstream out(script);
    out << "#!/bin/sh\n"
           "if [ -n \"$OJS_LAST_CHECKPOINT\" ]; then echo \"{\\\"resumed_from\\\": $OJS_LAST_CHECKPOINT}\"; exit 0; fi\n"
           "trap 'echo \"{\\\"epoch\\\": 2, \\\"step\\\": 1200, \\\"loss\\\": 0.42, \\\"storage_key\\\": \\\"ckpt/step-1200\\\"}\" > \"$OJS_CHECKPOINT_FILE\"; exit 0' TERM\n"
           "while true; do sleep 0.1; done\n";
  }
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  WorkerAgent l4{broker.url(), "l4", "l4-inference.json",
                 {"--command", "ml.spot=" + script, "--command", "ml.reserved=echo '{\"done\": true}'"}};

  const json gpu = {{"ext_ml_gpu_type", "nvidia-l4"}, {"ext_ml_gpu_count", 1}};
  json spot = {{"type", "ml.spot"}, {"args", json::array()}, {"options", {{"queue", "agents"}}},
               {"ext_ml_priority_class", "spot"}, {"ext_ml_preemption_grace_period_s", 10}, {"ext_ml_checkpoint_on_preempt", true},
               {"ext_ml_checkpoint_enabled", true}, {"ext_ml_checkpoint_storage_uri", "file:///tmp/ckpt/"}};
  spot.update(gpu);
  const auto spot_id = api.push(spot);
  ASSERT_EQ(wait_for_state(api, spot_id, "active")["state"], "active");

  json reserved = {{"type", "ml.reserved"}, {"args", json::array()}, {"options", {{"queue", "agents"}}}, {"ext_ml_priority_class", "reserved"}};
  reserved.update(gpu);
  const auto reserved_id = api.push(reserved);
  auto r = wait_for_state(api, reserved_id, "completed", 30000);
  ASSERT_EQ(r["state"], "completed") << r.dump();
  EXPECT_EQ(r["worker_id"], "l4");

  auto s = wait_for_state(api, spot_id, "completed", 30000);
  ASSERT_EQ(s["state"], "completed") << s.dump();
  EXPECT_EQ(s["preemption_count"], 1);
  EXPECT_EQ(s["attempt"], 1) << "preemption must not consume an attempt";
  EXPECT_EQ(s["last_checkpoint"]["step"], 1200);
  EXPECT_EQ(s["result"]["resumed_from"]["step"], 1200) << "the resumed run received its checkpoint";
}
