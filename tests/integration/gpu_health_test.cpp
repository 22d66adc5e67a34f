// A real worker process on the fake NVML library (tests/fixtures/nvml: the
// NVML edge is the one thing faked) against a real broker and redis-server:
// MIG slices are placed by UUID, and an injected XID 79 takes a GPU out of
// service in the worker, the broker's placement and the admin read models.
#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "ojs/client/http_client.hpp"
#include "support/child_process.hpp"
#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

// The worker binary with discovery on the fake NVML library (GPU 0 whole,
// GPU 1 in MIG mode: 3g.40gb, 1g.10gb, 1g.10gb, once FAKE_NVML_MIG=1 and
// FAKE_NVML_ECC=0 are in its environment); its job prints CUDA_VISIBLE_DEVICES.
std::vector<std::string> fake_gpu_worker(const std::string& broker_url, const std::string& dir) {
  const std::string config = dir + "/worker.json";
  std::ofstream(config) << json{{"nvml_library", OJS_FAKE_NVML},
                                {"commands", {{"ml.task", R"(printf '{"cvd": "%s"}' "$CUDA_VISIBLE_DEVICES")"}}}}
                               .dump();
  return {binary_path("worker/worker"), "--broker", broker_url, "--worker-id", "gpu-w", "--queues", "gpu",
          "--config", config, "--poll-interval-ms", "100", "--heartbeat-interval-s", "1", "--log-level", "info",
          "--work-dir", dir + "/work"};
}

json worker_entry(Api& api, const std::string& id) {
  const auto reply = api.get("/ojs/v1/admin/workers");  // kept: the loop reads into it
  for (const auto& w : reply.body["workers"])
    if (w["id"] == id) return w;
  return nullptr;
}

json gpu_job(double memory_gb) { return ml_job("gpu", {{"ext_ml_gpu_memory_gb", memory_gb}}); }

}  // namespace

TEST(GpuHealth, MigSlicesByUuidThenXid79TakesTheGpuOutOfService) {
  RedisServer redis;
  // No cordon: with every device lost the worker keeps fetching, so a job's diagnosis
  // shows the count (XidPolicy.* covers the cordon).
  BrokerProcess broker{redis.url(), {"--cordon-unhealthy-share", "0"}};
  Api api(broker.url());
  const std::string dir = make_temp_dir("gpu-health");
  const std::string xid_file = dir + "/xid";
  ChildProcess worker(fake_gpu_worker(broker.url(), dir),
                      {{"FAKE_NVML_MIG", "1"}, {"FAKE_NVML_ECC", "0"}, {"FAKE_NVML_XID_FILE", xid_file}});

  // A 10 GB job takes the smallest MIG slice, addressed by its MIG UUID.
  const auto small = api.push(gpu_job(10));
  auto done = wait_for_state(api, small, "completed");
  ASSERT_EQ(done["state"], "completed") << done.dump();
  EXPECT_EQ(done["result"]["cvd"], "MIG-fake-1-2");
  EXPECT_EQ(done["ext_ml_assigned_devices"], json({3}));

  // The worker advertised four devices, all healthy.
  json w = worker_entry(api, "gpu-w");
  ASSERT_TRUE(w.is_object());
  ASSERT_EQ(w["capabilities"]["devices"].size(), 4u) << w.dump();
  EXPECT_EQ(w["capabilities"]["devices"][2]["mig_profile"], "1g.10gb");
  EXPECT_EQ(w["unhealthy_devices"], json::array());

  // XID 79 on GPU 1: its three slices become unhealthy, and the broker hears why.
  std::ofstream(xid_file) << "1 79\n";
  for (int waited = 0; waited < 30000 && w["unhealthy_devices"].size() < 3; waited += 100) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    w = worker_entry(api, "gpu-w");
  }
  ASSERT_EQ(w["unhealthy_devices"].size(), 3u) << w.dump();
  for (const auto& d : w["unhealthy_devices"]) EXPECT_EQ(d["reason"], "xid 79: GPU has fallen off the bus");
  EXPECT_EQ(w["unhealthy_devices"][1], json({{"index", 3}, {"uuid", "MIG-fake-1-2"}, {"mig_profile", "1g.10gb"},
                                             {"reason", "xid 79: GPU has fallen off the bus"}}));
  EXPECT_EQ(w["capabilities"]["devices"][1]["healthy"], false);
  EXPECT_EQ(w["capabilities"]["devices"][0]["healthy"], true);

  // The broker no longer places on the slices: the same 10 GB job gets the whole GPU 0.
  const auto after = api.push(gpu_job(10));
  done = wait_for_state(api, after, "completed");
  ASSERT_EQ(done["state"], "completed") << done.dump();
  EXPECT_EQ(done["ext_ml_assigned_devices"], json({0}));
  EXPECT_EQ(done["result"]["cvd"], "0");

  // The status page says which device and why.
  ojs::HttpClientOptions options;
  options.base_url = broker.url();
  ojs::HttpClient http(options);
  const auto page = http.get("/ojs/status");
  ASSERT_EQ(page.status, 200);
  EXPECT_NE(page.body.find("device 3 (1g.10gb): xid 79: GPU has fallen off the bus"), std::string::npos);

  // With GPU 0 lost too, a GPU job waits, and its diagnosis counts the unhealthy devices.
  std::ofstream(xid_file) << "0 79\n";
  for (int waited = 0; waited < 30000 && w["unhealthy_devices"].size() < 4; waited += 100) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    w = worker_entry(api, "gpu-w");
  }
  ASSERT_EQ(w["unhealthy_devices"].size(), 4u) << w.dump();
  const auto stuck = api.push(gpu_job(10));
  json diagnosis;
  std::string reason;
  for (int waited = 0; waited < 30000 && reason.find("unhealthy") == std::string::npos; waited += 200) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    diagnosis = api.get("/ojs/v1/jobs/" + stuck + "/diagnosis").body["diagnosis"];
    reason = diagnosis.value("/by_predicate/free_gpus/sample_reason"_json_pointer, std::string());
  }
  EXPECT_EQ(reason, "insufficient free GPUs: 0 free, job needs 1 (4 unhealthy)") << diagnosis.dump();
  EXPECT_EQ(api.get("/ojs/v1/jobs/" + stuck).body["job"]["state"], "available");
}
