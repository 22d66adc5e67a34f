#include "worker/discovery/gpu_mapping.hpp"
#include "worker/discovery/nvml_loader.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace ojs::worker {
namespace {

TEST(NvmlLoader, MissingLibraryMeansNoGpusAndSaysWhy) {
  const auto result = load_nvml_inventory("libnvidia-ml-not-installed.so.1");
  EXPECT_FALSE(result.inventory.has_value());
  EXPECT_NE(result.unavailable_reason.find("libnvidia-ml-not-installed"), std::string::npos);
}

// tests/fixtures/nvml/fake_libnvidia_ml.c, built by CMake (target fake_nvml),
// loaded through the same dlopen path as the real driver library.
TEST(NvmlLoader, ReadsRawValuesThroughDlopen) {
  const auto result = load_nvml_inventory(OJS_FAKE_NVML);
  ASSERT_TRUE(result.inventory.has_value()) << result.unavailable_reason;
  const auto& inventory = *result.inventory;
  EXPECT_EQ(inventory.driver_version, "550.54.15");
  EXPECT_EQ(inventory.cuda_driver_version, 12040);
  ASSERT_EQ(inventory.gpus.size(), 2u);
  const auto& gpu = inventory.gpus[1];
  EXPECT_EQ(gpu.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(gpu.uuid, "GPU-fake-1");
  EXPECT_EQ(gpu.memory_total_bytes, 85520809984ULL);
  EXPECT_EQ(gpu.cuda_compute_capability, (std::array<int, 2>{9, 0}));
  EXPECT_EQ(canonical_pci_bus_id(gpu.pci_bus_id), "0000:2a:00.0");
  ASSERT_EQ(gpu.nvlinks.size(), 18u);
  EXPECT_TRUE(gpu.nvlinks[3].active);
  EXPECT_EQ(gpu.nvlinks[3].remote_device_type, "switch");
  EXPECT_EQ(gpu.nvlinks[3].remote_pci_bus_id, "00000000:08:00.0");
  EXPECT_FALSE(gpu.nvlinks[4].active);
  EXPECT_EQ(gpu.ecc_uncorrected_volatile, 5);
  EXPECT_EQ(inventory.gpus[0].ecc_uncorrected_volatile, 0);

  const auto caps = map_gpu_inventory(inventory);
  EXPECT_EQ(caps.devices[0]["nvlink_peers"], nlohmann::json({1}));  // same NVSwitch fabric
  EXPECT_EQ(caps.gpu["interconnect"], "pcie");  // only one healthy GPU is left to link
  EXPECT_TRUE(caps.devices[0]["healthy"].get<bool>());
  EXPECT_FALSE(caps.devices[1]["healthy"].get<bool>());
  EXPECT_FALSE(caps.devices[0].contains("mig_profile"));
  EXPECT_EQ(inventory.gpus[0].compute_mode, 0);
}

// Sets an environment variable for one test (the fake library reads it at call time).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) { ::setenv(name, value.c_str(), 1); }
  ~ScopedEnv() { ::unsetenv(name_); }

 private:
  const char* name_;
};

TEST(NvmlLoader, MigEnabledGpuYieldsItsSlices) {
  ScopedEnv mig("FAKE_NVML_MIG", "1");
  ScopedEnv ecc("FAKE_NVML_ECC", "0");
  const auto result = load_nvml_inventory(OJS_FAKE_NVML);
  ASSERT_TRUE(result.inventory.has_value()) << result.unavailable_reason;
  const auto& gpu = result.inventory->gpus.at(1);
  EXPECT_TRUE(gpu.mig_enabled);
  EXPECT_FALSE(result.inventory->gpus[0].mig_enabled);
  EXPECT_EQ(gpu.max_mig_devices, 7u);
  ASSERT_EQ(gpu.mig_devices.size(), 3u);  // slot 1 is empty
  EXPECT_EQ(gpu.mig_devices[1].index, 2u);
  EXPECT_EQ(gpu.mig_devices[1].uuid, "MIG-fake-1-2");
  EXPECT_EQ(gpu.mig_devices[1].memory_total_bytes, 9984ULL << 20);
  EXPECT_EQ(gpu.mig_devices[0].gpu_instance_slice_count, 3u);

  const auto caps = map_gpu_inventory(*result.inventory);
  // GPU 0 whole at index 0; GPU 1 replaced by its three slices, numbered from 2.
  ASSERT_EQ(caps.devices.size(), 4u);
  EXPECT_EQ(caps.gpu["count"], 4);
  EXPECT_EQ(caps.devices[0]["index"], 0);
  EXPECT_FALSE(caps.devices[0].contains("parent_index"));
  EXPECT_EQ(caps.devices[0]["nvlink_peers"], nlohmann::json::array());  // GPU 1 is no device of its own now
  const auto& small = caps.devices[2];
  EXPECT_EQ(small["index"], 3);
  EXPECT_EQ(small["uuid"], "MIG-fake-1-2");
  EXPECT_EQ(small["mig_profile"], "1g.10gb");
  EXPECT_EQ(small["parent_index"], 1);
  EXPECT_DOUBLE_EQ(small["memory_gb"].get<double>(), 10.4);
  EXPECT_DOUBLE_EQ(small["compute_fraction"].get<double>(), 0.142);
  EXPECT_EQ(small["type"], "nvidia-h100");
  EXPECT_EQ(small["nvlink_peers"], nlohmann::json::array());
  EXPECT_TRUE(small["healthy"].get<bool>());
  EXPECT_EQ(caps.devices[1]["mig_profile"], "3g.40gb");
  EXPECT_EQ(caps.devices[1]["index"], 2);
  EXPECT_DOUBLE_EQ(caps.gpu["memory_gb"].get<double>(), 85.5);  // the whole GPU: per-device checks come at assignment
  EXPECT_EQ(caps.gpu["interconnect"], "pcie");
  EXPECT_EQ(caps.labels["nvidia.com/mig.enabled"], "true");
}

}  // namespace
}  // namespace ojs::worker
