// GPU sharing through the broker: an MPS-shared device takes up to its
// max_jobs jobs whose memory fits beside each other, a MIG device takes
// single-GPU jobs only, an unhealthy device none (examples/workers/
// h100-mig-mps.json: GPU 0 whole, 85.5 GB, MPS, 2 jobs; three MIG devices of
// GPU 1, the last unhealthy). tests/integration/gpu_memory_test.cpp: memory.
#include <gtest/gtest.h>

#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

TEST(GpuSharing, MpsDeviceTakesMaxJobsAndMigDevicesOnlySingleGpuJobs) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api(broker.url());
  const json caps = {{"capabilities", example_worker("h100-mig-mps")}};
  std::string first;
  // 42.7 GB: more than the 3g.40gb slice has, and two fit device 0's 85.5 GB.
  for (int i = 0; i < 3; ++i) first = api.push(ml_job("share", {{"ext_ml_gpu_memory_gb", 42.7}}));

  // Two FETCHes, two jobs on device 0 (MPS, max_jobs 2); the third waits.
  for (int i = 0; i < 2; ++i) {
    const auto jobs = api.fetch({"share"}, "mps-box", 1, caps);
    ASSERT_EQ(jobs.size(), 1u) << i << api.get("/ojs/v1/jobs/" + first + "/diagnosis").body.dump();
    EXPECT_EQ(jobs[0]["ext_ml_assigned_devices"], json({0}));
  }
  EXPECT_EQ(api.fetch({"share"}, "mps-box", 1, caps).size(), 0u);

  // A 10 GB job takes the healthy 1g.10gb MIG device (index 3; index 4 is unhealthy).
  api.push(ml_job("small", {{"ext_ml_gpu_memory_gb", 10}}));
  const auto small = api.fetch({"small"}, "mps-box", 1, caps);
  ASSERT_EQ(small.size(), 1u);
  EXPECT_EQ(small[0]["ext_ml_assigned_devices"], json({3}));

  // Two GPUs of 10 GB: MIG devices take single-GPU jobs only, device 0 is full.
  api.push(ml_job("pair", {{"ext_ml_gpu_count", 2}, {"ext_ml_gpu_memory_gb", 10}}));
  EXPECT_EQ(api.fetch({"pair"}, "mps-box", 1, caps).size(), 0u);
}
