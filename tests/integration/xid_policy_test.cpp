// The XID policy end to end: real worker processes (one on the fake NVML
// library, tests/fixtures/nvml, whose XIDs the test injects), a real broker and
// redis-server. A fatal XID stops the job on the failed GPU, which checkpoints
// and runs again on another worker without losing an attempt; a worker with
// enough unhealthy devices is cordoned; warning XIDs are counted; unhealthy
// and drained devices are out of every free count; per-GPU drain works through
// the admin API and ojsctl.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "ojs/client/http_client.hpp"
#include "support/child_process.hpp"
#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

// A training script: resumes from $OJS_LAST_CHECKPOINT (and says where), checkpoints and exits on SIGTERM
// (once it has touched dir/trap-ready: a SIGTERM before its trap is set just ends it).
std::string training_script(const std::string& dir) {
  const std::string script = dir + "/train.sh";
  std::ofstream(script) << "#!/bin/sh\n"
                           "if [ -n \"$OJS_LAST_CHECKPOINT\" ]; then\n"
                           "  printf '{\"resumed_from\": %s, \"cvd\": \"%s\"}' \"$OJS_LAST_CHECKPOINT\" \"$CUDA_VISIBLE_DEVICES\"; exit 0\n"
                           "fi\n"
                           "trap 'echo \"{\\\"step\\\": 1200, \\\"storage_key\\\": \\\"ckpt/step-1200\\\"}\" > \"$OJS_CHECKPOINT_FILE\"; exit 0' TERM\n"
                           "touch \"" + dir + "/trap-ready\"\n"  // a SIGTERM from here on checkpoints
                           "while true; do sleep 0.05; done\n";
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  return script;
}

// The worker binary on the fake NVML library (two whole H100s, no ECC errors),
// its XIDs injected through `xid_file` ("<gpu> <xid>").
std::unique_ptr<ChildProcess> fake_gpu_worker(const std::string& broker_url, const std::string& id, const std::string& dir,
                                              const std::string& command, const std::string& xid_file) {
  const std::string config = dir + "/" + id + ".json";
  std::ofstream(config) << json{{"nvml_library", OJS_FAKE_NVML}, {"commands", {{"ml.*", command}}}}.dump();
  return std::make_unique<ChildProcess>(
      std::vector<std::string>{binary_path("worker/worker"), "--broker", broker_url, "--worker-id", id, "--queues", "gpu",
                               "--config", config, "--poll-interval-ms", "100", "--heartbeat-interval-s", "1",
                               "--log-level", "info", "--work-dir", dir + "/work-" + id},
      std::map<std::string, std::string>{{"FAKE_NVML_ECC", "0"}, {"FAKE_NVML_XID_FILE", xid_file}});
}

std::unique_ptr<ChildProcess> simulated_worker(const std::string& broker_url, const std::string& id, const std::string& caps,
                                               const std::string& command, const std::string& dir) {
  return std::make_unique<ChildProcess>(std::vector<std::string>{
      binary_path("worker/worker"), "--broker", broker_url, "--worker-id", id, "--queues", "gpu", "--capabilities-file",
      std::string(OJS_SOURCE_DIR) + "/examples/workers/" + caps + ".json", "--command", "ml.*=" + command,
      "--poll-interval-ms", "100", "--heartbeat-interval-s", "1", "--log-level", "info", "--work-dir", dir + "/work-" + id});
}

json worker_entry(Api& api, const std::string& id) {
  const auto reply = api.get("/ojs/v1/admin/workers");  // kept: the loop reads into it
  for (const auto& w : reply.body["workers"])
    if (w["id"] == id) return w;
  return nullptr;
}

// Polls the admin worker list (bounded) until `done` holds for the worker; returns its last entry.
template <typename Done>
json wait_for_worker(Api& api, const std::string& id, Done done) {
  json w = worker_entry(api, id);
  for (int waited = 0; waited < 30000 && !(w.is_object() && done(w)); waited += 100) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    w = worker_entry(api, id);
  }
  return w;
}

// Waits (bounded) until the training script has set its SIGTERM trap.
bool wait_for_trap(const std::string& dir) {
  for (int waited = 0; waited < 30000; waited += 20) {
    if (std::filesystem::exists(dir + "/trap-ready")) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

std::string metrics(const std::string& url) {
  ojs::HttpClientOptions options;
  options.base_url = url;
  ojs::HttpClient http(options);
  return http.get("/metrics").body;
}

}  // namespace

TEST(XidPolicy, Xid79DuringAJobRequeuesItElsewhereWithItsCheckpoint) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api(broker.url());
  const std::string dir = make_temp_dir("xid-requeue");
  const std::string xid_file = dir + "/xid";
  const std::string script = training_script(dir);
  auto first = fake_gpu_worker(broker.url(), "gpu-a", dir, script, xid_file);

  // Two GPUs: all of gpu-a's, so once one fails it cannot run there again.
  const auto id = api.push(ml_job("gpu", {{"ext_ml_gpu_count", 2}, {"ext_ml_preemption_grace_period_s", 10},
                                          {"ext_ml_checkpoint_enabled", true},
                                          {"ext_ml_checkpoint_storage_uri", "file:///tmp/ckpt/"}}));
  const auto active = wait_for_state(api, id, "active");
  ASSERT_EQ(active["state"], "active") << active.dump();
  ASSERT_EQ(active["worker_id"], "gpu-a");
  auto second = simulated_worker(broker.url(), "gpu-b", "4xa100-pcie", script, dir);  // the other place it fits

  ASSERT_TRUE(wait_for_trap(dir)) << "the job never started on gpu-a";
  std::ofstream(xid_file) << "1 79\n";
  const auto done = wait_for_state(api, id, "completed");
  ASSERT_EQ(done["state"], "completed") << done.dump();
  EXPECT_EQ(done["worker_id"], "gpu-b");
  EXPECT_EQ(done["result"]["resumed_from"]["step"], 1200) << "the run on gpu-b resumed from gpu-a's checkpoint";
  EXPECT_EQ(done["last_checkpoint"]["step"], 1200);
  EXPECT_EQ(done["attempt"], 1) << "a GPU fault is not the job's failure";
  ASSERT_TRUE(done["errors"].is_array()) << done.dump();
  ASSERT_EQ(done["errors"].size(), 1u) << done.dump();
  EXPECT_EQ(done["errors"][0]["type"], "gpu_fault");
  EXPECT_NE(done["errors"][0]["message"].get<std::string>().find("xid 79"), std::string::npos) << done.dump();
}

TEST(XidPolicy, WarningsCountedFatalXidsCordonAndLeaveEveryFreeCount) {
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--cordon-unhealthy-share", "0.5"}};
  Api api(broker.url());
  const std::string dir = make_temp_dir("xid-cordon");
  const std::string xid_file = dir + "/xid";
  auto worker = fake_gpu_worker(broker.url(), "gpu-c", dir, "echo '{}'", xid_file);
  json w = wait_for_worker(api, "gpu-c", [](const json& e) { return e["gpus_total"] == 2; });
  ASSERT_EQ(w["gpus_free"], 2) << w.dump();

  // XID 94 (contained ECC error): a warning, counted and advertised; the GPU stays in service.
  std::ofstream(xid_file) << "0 94\n";
  w = wait_for_worker(api, "gpu-c", [](const json& e) { return e["capabilities"]["devices"][0].value("xid_warnings", 0) == 1; });
  ASSERT_EQ(w["capabilities"]["devices"][0].value("xid_warnings", 0), 1) << w.dump();
  EXPECT_EQ(w["capabilities"]["devices"][0]["last_xid_warning"], "xid 94: contained ECC error (only the affected application was stopped)");
  EXPECT_EQ(w["capabilities"]["devices"][0]["healthy"], true);
  EXPECT_EQ(w["state"], "running");
  EXPECT_NE(metrics(broker.url()).find("ojs_gpu_xid_warnings 1"), std::string::npos);

  // XID 79 on GPU 1: half the devices unhealthy, the configured share: cordoned.
  std::ofstream(xid_file) << "1 79\n";
  w = wait_for_worker(api, "gpu-c", [](const json& e) { return e["state"] == "quiet"; });
  ASSERT_EQ(w["state"], "quiet") << w.dump();
  EXPECT_EQ(w["unhealthy_devices"].size(), 1u);
  EXPECT_EQ(w["gpus_free"], 1) << "an unhealthy device is not free";
  const auto overview = api.get("/ojs/v1/admin/overview").body;
  for (const auto& o : overview["workers"])
    if (o["id"] == "gpu-c") EXPECT_EQ(o["gpus_free"], 1) << o.dump();
  const auto text = metrics(broker.url());
  EXPECT_NE(text.find("ojs_gpus_unhealthy 1"), std::string::npos) << text;
  EXPECT_NE(text.find("ojs_workers{state=\"quiet\"} 1"), std::string::npos) << text;
}

TEST(XidPolicy, PerGpuDrainThroughTheAdminApiAndOjsctl) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api(broker.url());
  const std::string dir = make_temp_dir("gpu-drain");
  auto worker = simulated_worker(broker.url(), "a100", "4xa100-pcie", "echo \"{\\\"cvd\\\": \\\"$CUDA_VISIBLE_DEVICES\\\"}\"", dir);
  json w = wait_for_worker(api, "a100", [](const json& e) { return e["gpus_total"] == 4; });
  ASSERT_TRUE(w.is_object());
  auto ojsctl = [&](const std::vector<std::string>& args) {
    std::vector<std::string> argv{binary_path("ojsctl/ojsctl"), "--url", broker.url()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_process(argv, 60);
  };

  for (const char* index : {"0", "1"}) {
    const auto r = ojsctl({"device", "drain", "a100", index});
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  const auto r = api.post("/ojs/v1/admin/workers/a100/devices/2/drain", json::object());
  ASSERT_EQ(r.status, 200) << r.body.dump();
  EXPECT_EQ(r.body["worker"]["drained_devices"], json({0, 1, 2}));
  w = worker_entry(api, "a100");
  EXPECT_EQ(w["drained_devices"], json({0, 1, 2}));
  EXPECT_EQ(w["gpus_free"], 1) << w.dump();

  // One GPU: the one device not drained. Two: they wait.
  const auto one = api.push(ml_job("gpu", {{"ext_ml_gpu_count", 1}}));
  auto done = wait_for_state(api, one, "completed");
  ASSERT_EQ(done["state"], "completed") << done.dump();
  EXPECT_EQ(done["ext_ml_assigned_devices"], json({3}));
  EXPECT_EQ(done["result"]["cvd"], "3");
  const auto two = api.push(ml_job("gpu", {{"ext_ml_gpu_count", 2}}));
  std::string reason;
  for (int waited = 0; waited < 30000 && reason.empty(); waited += 100) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    reason = api.get("/ojs/v1/jobs/" + two + "/diagnosis")
                 .body["diagnosis"]
                 .value("/by_predicate/free_gpus/sample_reason"_json_pointer, std::string());
  }
  EXPECT_EQ(reason, "insufficient free GPUs: 1 free, job needs 2");
  EXPECT_EQ(api.get("/ojs/v1/jobs/" + two).body["job"]["state"], "available");

  const auto undrain = ojsctl({"device", "undrain", "a100", "0"});
  ASSERT_EQ(undrain.exit_code, 0) << undrain.output;
  EXPECT_NE(undrain.output.find("drained devices: [1,2]"), std::string::npos) << undrain.output;
  done = wait_for_state(api, two, "completed");
  ASSERT_EQ(done["state"], "completed") << done.dump();
  EXPECT_EQ(done["ext_ml_assigned_devices"], json({0, 3}));

  // A worker or a device nobody advertised: 404, nothing written.
  EXPECT_EQ(api.post("/ojs/v1/admin/workers/nobody/devices/0/drain", json::object()).status, 404);
  EXPECT_EQ(api.post("/ojs/v1/admin/workers/a100/devices/9/drain", json::object()).status, 404);
  EXPECT_EQ(api.post("/ojs/v1/admin/workers/a100/devices/x/drain", json::object()).status, 400);
  EXPECT_EQ(ojsctl({"device", "drain", "nobody", "0"}).exit_code, 4);  // 404
}
