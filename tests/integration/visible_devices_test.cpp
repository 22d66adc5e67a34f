// Devices always explicit: the README demo (scripts/demo.sh) with its four
// simulated workers as real worker processes whose command echoes
// CUDA_VISIBLE_DEVICES. Every GPU job runs with a non-empty value naming the
// devices it was assigned, also on l4-inference.json, which gives gpu.count and
// no device list; a CPU job on a GPU worker sees no GPU ("-1"), and on a worker
// that manages no GPU the operator's own value stands.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "support/child_process.hpp"
#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

const std::string kWorkers[] = {"dgx-h100", "4xa100-pcie", "l4-inference", "cpu-node"};
constexpr const char* kOperatorsValue = "operator-set";

std::unique_ptr<ChildProcess> demo_worker(const std::string& broker_url, const std::string& name) {
  std::map<std::string, std::string> env;
  if (name == "cpu-node") env["CUDA_VISIBLE_DEVICES"] = kOperatorsValue;  // the operator pinned this host itself
  return std::make_unique<ChildProcess>(
      std::vector<std::string>{binary_path("worker/worker"), "--broker", broker_url, "--worker-id", name, "--queues",
                               "training,inference", "--capabilities-file",
                               std::string(OJS_SOURCE_DIR) + "/examples/workers/" + name + ".json", "--command",
                               "ml.*=echo \"{\\\"node\\\": \\\"" + name + "\\\", \\\"devices\\\": \\\"$CUDA_VISIBLE_DEVICES\\\"}\"",
                               "--work-dir", make_temp_dir("demo-" + name), "--poll-interval-ms", "100",
                               "--heartbeat-interval-s", "1", "--log-level", "warn"},
      env);
}

std::string joined(const json& devices) {
  std::string out;
  for (const auto& d : devices) out += (out.empty() ? "" : ",") + std::to_string(d.get<int>());
  return out;
}

}  // namespace

TEST(VisibleDevices, ReadmeDemoGpuJobsSeeExactlyTheirAssignedDevices) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api(broker.url());
  std::map<std::string, std::string> ids;  // example name -> job id
  for (const auto& entry : std::filesystem::directory_iterator(std::string(OJS_SOURCE_DIR) + "/examples/jobs")) {
    const std::string name = entry.path().stem();
    if (name == "tpu-training") continue;  // no TPU worker in the demo: it waits, as the demo shows
    std::ifstream in(entry.path());
    ids[name] = api.push(json::parse(in));
  }
  ASSERT_GE(ids.size(), 5u);
  std::vector<std::unique_ptr<ChildProcess>> workers;
  for (const auto& name : kWorkers) workers.push_back(demo_worker(broker.url(), name));

  int gpu_jobs = 0;
  for (const auto& [name, id] : ids) {
    const auto job = wait_for_state(api, id, "completed");
    ASSERT_EQ(job["state"], "completed") << name << ": " << job.dump();
    const std::string seen = job["result"]["devices"];
    const std::string node = job["result"]["node"];
    if (job.contains("ext_ml_assigned_devices") && !job["ext_ml_assigned_devices"].empty()) {
      ++gpu_jobs;
      EXPECT_EQ(seen, joined(job["ext_ml_assigned_devices"])) << name << " on " << node;
    } else if (node == "cpu-node") {
      EXPECT_EQ(seen, kOperatorsValue) << name << ": the worker manages no GPU, the operator's value stands";
    } else {
      EXPECT_EQ(seen, "-1") << name << " ran without GPUs on GPU worker " << node;
    }
    EXPECT_FALSE(seen.empty()) << name << " on " << node << ": " << job.dump();
  }
  // llm-inference, sdk-meta-encoding (L4, the count-only worker), spot-sweep, train-8xh100.
  EXPECT_EQ(gpu_jobs, 4);
  EXPECT_EQ(api.get("/ojs/v1/jobs/" + ids["llm-inference"]).body["job"]["worker_id"], "l4-inference");
}

TEST(VisibleDevices, CountOnlyCapabilitiesEnumerateDevicesAndSaySo) {
  const auto run = run_process({binary_path("worker/worker"), "--print-capabilities", "--capabilities-file",
                                std::string(OJS_SOURCE_DIR) + "/examples/workers/l4-inference.json"});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("gpu.count 1 and no device list: advertising devices 0..0"), std::string::npos) << run.output;
  const auto start = run.output.find('{');
  ASSERT_NE(start, std::string::npos) << run.output;
  const auto caps = json::parse(run.output.substr(start, run.output.rfind('}') - start + 1), nullptr, false);
  ASSERT_TRUE(caps.is_object()) << run.output;
  EXPECT_EQ(caps["devices"], json::parse(R"([{"index": 0, "memory_gb": 24}])"));
}
