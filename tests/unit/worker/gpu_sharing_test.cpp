// MPS vs exclusive GPUs: how the mode is resolved and advertised.
#include "worker/discovery/gpu_sharing.hpp"
#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

namespace ojs::worker {
namespace {

TEST(GpuSharing, AutoFollowsTheMpsDaemonAndThePercentageSetsJobsPerGpu) {
  EXPECT_FALSE(resolve_gpu_sharing({}, false, nullptr).mps);
  const auto mps = resolve_gpu_sharing({}, true, nullptr);
  EXPECT_TRUE(mps.mps);
  EXPECT_EQ(mps.active_thread_percentage, 50);
  EXPECT_EQ(mps.max_jobs(), 2);
  EXPECT_EQ(resolve_gpu_sharing({}, true, "25").max_jobs(), 4);            // the daemon's environment
  EXPECT_EQ(resolve_gpu_sharing({"mps", 30}, false, "25").max_jobs(), 3);  // config wins
  EXPECT_FALSE(resolve_gpu_sharing({"exclusive", 0}, true, nullptr).mps);
  EXPECT_EQ(resolve_gpu_sharing({"exclusive", 0}, true, nullptr).max_jobs(), 1);
  EXPECT_THROW(resolve_gpu_sharing({"mps", 0}, false, "250"), std::invalid_argument);
}

TEST(GpuSharing, MpsDaemonIsSeenThroughItsControlPipe) {
  testing::ScratchDir dir("mps");
  ::setenv("CUDA_MPS_PIPE_DIRECTORY", dir.path().c_str(), 1);
  EXPECT_FALSE(mps_daemon_running());
  std::ofstream(dir.path() / "control") << "";
  EXPECT_TRUE(mps_daemon_running());
  ::unsetenv("CUDA_MPS_PIPE_DIRECTORY");
}

TEST(GpuSharing, AdvertisedPerDeviceAndAsLabels) {
  const nlohmann::json caps = {{"devices", {{{"index", 0}}, {{"index", 1}}}}, {"labels", nlohmann::json::object()}};
  const auto shared = apply_gpu_sharing(caps, resolve_gpu_sharing({"mps", 50}, false, nullptr));
  EXPECT_EQ(shared["devices"][1]["sharing"], "mps");
  EXPECT_EQ(shared["devices"][1]["mps_active_thread_percentage"], 50);
  EXPECT_EQ(shared["devices"][1]["max_jobs"], 2);
  EXPECT_EQ(shared["labels"]["nvidia.com/gpu.sharing"], "mps");
  EXPECT_EQ(shared["labels"]["nvidia.com/mps.active-thread-percentage"], "50");
  const auto exclusive = apply_gpu_sharing(caps, {});
  EXPECT_EQ(exclusive["devices"][0]["sharing"], "exclusive");
  EXPECT_FALSE(exclusive["devices"][0].contains("max_jobs"));
  EXPECT_EQ(exclusive["labels"]["nvidia.com/gpu.sharing"], "exclusive");
  EXPECT_FALSE(apply_gpu_sharing({{"accelerator", "cpu"}}, {}).contains("labels"));  // no GPU, no label
}

}  // namespace
}  // namespace ojs::worker
