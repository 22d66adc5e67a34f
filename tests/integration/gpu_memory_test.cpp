// GPU memory is accounted per device: a real worker process advertising
// examples/workers/h100-mig-mps.json (device 0 whole, 85.5 GB, MPS max_jobs 2;
// MIG devices 2 (3g.40gb, 42.4 GB) and 3 (1g.10gb, 10.4 GB), MPS max_jobs 2)
// never holds jobs whose memory sums past a device's, in one FETCH or across
// FETCHes while the first job runs. Its jobs block until the test releases them.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <thread>

#include "support/child_process.hpp"
#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

struct MpsWorker {
  std::string dir = make_temp_dir("gpu-memory");
  std::string release = dir + "/release";
  ChildProcess process;

  explicit MpsWorker(const std::string& broker_url)
      : process({binary_path("worker/worker"), "--broker", broker_url, "--worker-id", "mps-box", "--queues", "mem",
                 "--capabilities-file", std::string(OJS_SOURCE_DIR) + "/examples/workers/h100-mig-mps.json",
                 "--command",
                 "ml.task=while [ ! -e " + release + " ]; do sleep 0.05; done; printf '{\"cvd\": \"%s\"}' \"$CUDA_VISIBLE_DEVICES\"",
                 "--concurrency", "4", "--poll-interval-ms", "100", "--heartbeat-interval-s", "1", "--log-level", "info",
                 "--work-dir", dir + "/work"}) {}
  void release_jobs() const { std::ofstream(release) << "go\n"; }
};

json job_of(Api& api, const std::string& id) { return api.get("/ojs/v1/jobs/" + id).body["job"]; }

// Waits (bounded) until the broker has recorded a free_gpus refusal of `id` by a FETCH; returns its reason.
std::string free_gpus_refusal(Api& api, const std::string& id) {
  std::string reason;
  for (int waited = 0; waited < 30000 && reason.empty(); waited += 100) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const auto diagnosis = api.get("/ojs/v1/jobs/" + id + "/diagnosis").body["diagnosis"];
    reason = diagnosis.value("/by_predicate/free_gpus/sample_reason"_json_pointer, std::string());
  }
  return reason;
}

json gpu_job(double memory_gb) { return ml_job("mem", {{"ext_ml_gpu_memory_gb", memory_gb}}); }

}  // namespace

TEST(GpuMemory, TwoEightyGigabyteJobsNeverShareAnEightyFiveGigabyteDevice) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api(broker.url());
  MpsWorker worker(broker.url());

  // Device 0 is the only one with 80 GB; MPS would let two jobs on it, its memory only one.
  const auto first = api.push(gpu_job(80));
  ASSERT_EQ(wait_for_state(api, first, "active")["state"], "active");
  const auto second = api.push(gpu_job(80));
  const auto reason = free_gpus_refusal(api, second);  // a later FETCH, while the first is held
  EXPECT_NE(reason.find("insufficient free GPUs"), std::string::npos) << reason;
  // Device 0 has a free MPS slot: the refusal names its memory, not only a count (seen on a real H100).
  EXPECT_NE(reason.find("device 0 is shared (1 of 2 jobs) and has 5.5 of 85.5 GB left, job needs 80 GB"),
            std::string::npos)
      << reason;
  EXPECT_EQ(job_of(api, second)["state"], "available") << job_of(api, second).dump();

  worker.release_jobs();
  const auto done_first = wait_for_state(api, first, "completed");
  const auto done_second = wait_for_state(api, second, "completed");
  ASSERT_EQ(done_second["state"], "completed") << done_second.dump();
  EXPECT_EQ(done_first["ext_ml_assigned_devices"], json({0}));
  EXPECT_EQ(done_second["ext_ml_assigned_devices"], json({0}));
  EXPECT_EQ(done_second["result"]["cvd"], "0");
}

TEST(GpuMemory, TwoTenGigabyteJobsInOneFetchNeverShareATenPointFourGigabyteSlice) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api(broker.url());
  // Both queued before the worker starts: its first FETCH (count 4) sees both.
  const auto a = api.push(gpu_job(10));
  const auto b = api.push(gpu_job(10));
  MpsWorker worker(broker.url());

  const auto active_a = wait_for_state(api, a, "active");
  const auto active_b = wait_for_state(api, b, "active");
  ASSERT_EQ(active_b["state"], "active") << active_b.dump();
  // The 1g.10gb slice (3) has room for one 10 GB job; the other takes the next smallest fit, the 3g.40gb (2).
  const std::set<json> devices{active_a["ext_ml_assigned_devices"], active_b["ext_ml_assigned_devices"]};
  EXPECT_EQ(devices, (std::set<json>{json({2}), json({3})})) << active_a.dump() << "\n" << active_b.dump();

  worker.release_jobs();
  EXPECT_EQ(wait_for_state(api, a, "completed")["state"], "completed");
  EXPECT_EQ(wait_for_state(api, b, "completed")["state"], "completed");
}
