// GPU telemetry end to end: the real worker reads NVML (the fake library, whose
// temperatures the test sets through a file) every few tenths of a second, sends it
// with its devices, and the broker exports it in /metrics under the DCGM exporter's
// names; a device at or above the worker's temperature limit takes no job until it
// cools, without cordoning the worker. The sampling cost is printed.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "ojs/client/http_client.hpp"
#include "support/child_process.hpp"
#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

// The value of `name` for this worker's GPU in the exposition (-1 when absent).
double gauge(const std::string& text, const std::string& name, const std::string& worker, int gpu) {
  std::stringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(name + "{", 0) != 0) continue;
    if (line.find("worker=\"" + worker + "\"") == std::string::npos || line.find("gpu=\"" + std::to_string(gpu) + "\"") == std::string::npos)
      continue;
    return std::stod(line.substr(line.rfind(' ') + 1));
  }
  return -1;
}

std::string metrics(const std::string& url) {
  ojs::HttpClient client(ojs::HttpClientOptions{url, "", 10000, "", false});
  return client.get("/metrics").body;
}

json worker_entry(Api& api, const std::string& id) {
  const auto reply = api.get("/ojs/v1/admin/workers");
  for (const auto& w : reply.body["items"])
    if (w["id"] == id) return w;
  return nullptr;
}

}  // namespace

TEST(GpuTelemetry, NvmlReadingsReachMetricsAndAHotDeviceTakesNoJob) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api(broker.url());
  const std::string dir = make_temp_dir("gpu-telemetry");
  const std::string temps = dir + "/temps";
  std::ofstream(temps) << "40 45";
  std::ofstream(dir + "/worker.json") << json{{"nvml_library", OJS_FAKE_NVML},
                                              {"telemetry_interval_s", 0.2},
                                              {"max_gpu_temperature_c", 85},
                                              {"isolation", {{"mode", "off"}}},
                                              {"commands", {{"ml.task", R"(printf '{"cvd": "%s"}' "$CUDA_VISIBLE_DEVICES")"}}}}
                                             .dump();
  ChildProcess worker({binary_path("worker/worker"), "--broker", broker.url(), "--worker-id", "tel", "--queues", "gpu", "--config",
                       dir + "/worker.json", "--poll-interval-ms", "100", "--heartbeat-interval-s", "1", "--log-level", "info",
                       "--work-dir", dir + "/work"},
                      {{"FAKE_NVML_ECC", "0"}, {"FAKE_NVML_TEMP_FILE", temps}});

  // The fake's readings, under DCGM's names: GPU 0 at 30 % and 40 C, 2 GiB used, 100 W.
  std::string text;
  ASSERT_TRUE(wait_until([&] { return gauge(text = metrics(broker.url()), "DCGM_FI_DEV_GPU_TEMP", "tel", 0) == 40; })) << text;
  EXPECT_EQ(gauge(text, "DCGM_FI_DEV_GPU_TEMP", "tel", 1), 45);
  EXPECT_EQ(gauge(text, "DCGM_FI_DEV_GPU_UTIL", "tel", 0), 30);
  EXPECT_EQ(gauge(text, "DCGM_FI_DEV_GPU_UTIL", "tel", 1), 40);
  EXPECT_NEAR(gauge(text, "DCGM_FI_DEV_FB_USED", "tel", 0), 2048, 60);  // MiB, from 2.1 GB rounded to 0.1
  EXPECT_EQ(gauge(text, "DCGM_FI_DEV_POWER_USAGE", "tel", 1), 150);
  EXPECT_EQ(gauge(text, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "tel", 0), 0);

  // GPU 0 overheats: out of placement (not cordoned), the job goes to GPU 1.
  std::ofstream(temps) << "90 45";
  json w;
  ASSERT_TRUE(wait_until([&] {
    w = worker_entry(api, "tel");
    return !w.is_null() && !w["unhealthy_devices"].empty();
  })) << w.dump();
  EXPECT_EQ(w["unhealthy_devices"][0]["index"], 0);
  EXPECT_NE(w["unhealthy_devices"][0]["reason"].get<std::string>().find("temperature 90 C"), std::string::npos) << w.dump();
  const auto id = api.push(ml_job("gpu", {{"ext_ml_gpu_count", 1}}));
  const auto job = wait_for_state(api, id, "completed");
  ASSERT_EQ(job["state"], "completed") << job.dump();
  EXPECT_EQ(job["ext_ml_assigned_devices"], json::array({1}));
  EXPECT_EQ(worker_entry(api, "tel")["state"], "running") << "a hot device cordoned the worker";

  // Cooled: back in service.
  std::ofstream(temps) << "60 45";
  ASSERT_TRUE(wait_until([&] { return worker_entry(api, "tel")["unhealthy_devices"].empty(); }));

  // The sampling cost, as the worker reports it (CPU ms per minute of its run).
  const auto cost = worker_entry(api, "tel")["capabilities"]["telemetry"];
  ASSERT_TRUE(cost.is_object()) << cost.dump();
  EXPECT_GE(cost["samples"].get<long long>(), 2);
  std::cout << "telemetry sampling cost: " << cost.dump() << std::endl;
  RecordProperty("telemetry_cpu_ms_per_minute", std::to_string(cost["cpu_ms_per_minute"].get<double>()));
}
