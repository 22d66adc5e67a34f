// The CUDA libraries a worker offers (worker/isolation/cuda_libraries.hpp): which
// directory a job's version mounts where, the advertised version, and a version the
// worker lacks refused rather than run without its libraries.
#include <gtest/gtest.h>

#include <stdexcept>

#include "worker/config/worker_config.hpp"
#include "worker/isolation/cuda_libraries.hpp"

using namespace ojs::worker;

namespace {
const std::map<std::string, std::string> kLibraries = {{"11.8", "/opt/cuda-11.8"}, {"12.10", "/opt/cuda-12.10"}, {"12.2", "/opt/cuda-12.2"}};
}

TEST(CudaLibraries, AVersionTheWorkerHasIsMountedReadOnlyAtItsFixedPath) {
  const auto mount = cuda_mount(kLibraries, "12.2");
  ASSERT_TRUE(mount);
  EXPECT_EQ(mount->source, "/opt/cuda-12.2");
  EXPECT_EQ(mount->target, "/usr/local/cuda-12.2");
  EXPECT_EQ(mount->lib_dir, "/usr/local/cuda-12.2/lib64");
  EXPECT_FALSE(cuda_mount(kLibraries, "")) << "no version asked: nothing mounted";
  EXPECT_FALSE(cuda_mount({}, "12.2")) << "no map: the label is the driver's, nothing to mount";
}

TEST(CudaLibraries, AVersionTheWorkerLacksIsRefused) {
  try {
    cuda_mount(kLibraries, "12.4");
    FAIL() << "accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "the job needs CUDA 12.4 and this worker has the libraries of 11.8, 12.10, 12.2 only (isolation.cuda_libraries)");
  }
}

TEST(CudaLibraries, TheAdvertisedVersionComesFromTheMap) {
  EXPECT_EQ(newest_cuda_version(kLibraries), "12.10");
  nlohmann::json caps = {{"labels", {{kCudaVersionLabel, "13.0"}, {"region", "x"}}}};  // 13.0: the driver's, from NVML
  advertise_cuda_libraries(caps, kLibraries, true);
  EXPECT_EQ(caps["labels"][kCudaVersionLabel], "12.10");
  advertise_cuda_libraries(caps, kLibraries, false);
  EXPECT_FALSE(caps["labels"].contains(kCudaVersionLabel)) << "not isolated: no library can be mounted";
  nlohmann::json driver_only = {{"labels", {{kCudaVersionLabel, "13.0"}}}};
  advertise_cuda_libraries(driver_only, {}, true);
  EXPECT_EQ(driver_only["labels"][kCudaVersionLabel], "13.0") << "no map: the driver's version stands";
}

TEST(CudaLibraries, TheConfigMapsVersionsToAbsoluteDirectories) {
  const auto config = parse_worker_config(nlohmann::json::parse(R"({"isolation": {"cuda_libraries": {"12.2": "/opt/cuda-12.2"}}})"));
  EXPECT_EQ(config.isolation.cuda_libraries.at("12.2"), "/opt/cuda-12.2");
  for (const char* bad : {R"({"isolation": {"cuda_libraries": {"../x": "/opt/x"}}})", R"({"isolation": {"cuda_libraries": {"12.2": "opt"}}})",
                          R"({"isolation": {"cuda_libraries": ["12.2"]}})"})
    EXPECT_THROW(parse_worker_config(nlohmann::json::parse(bad)), std::invalid_argument) << bad;
}
