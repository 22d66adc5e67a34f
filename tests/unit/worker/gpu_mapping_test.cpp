#include "worker/config/json_file.hpp"
#include "worker/discovery/gpu_mapping.hpp"
#include "test_helpers.hpp"

#include <gtest/gtest.h>

namespace ojs::worker {
namespace {

RecordedGpuInventory load_fixture(const std::string& name) {
  return read_json_file(testing::fixture_path("nvml/" + name).string()).get<RecordedGpuInventory>();
}

TEST(GpuTypeId, MapsMarketingNamesToWellKnownIds) {
  EXPECT_EQ(gpu_type_id("NVIDIA H100 80GB HBM3"), "nvidia-h100");
  EXPECT_EQ(gpu_type_id("NVIDIA H100 PCIe"), "nvidia-h100");
  EXPECT_EQ(gpu_type_id("NVIDIA H200"), "nvidia-h200");
  EXPECT_EQ(gpu_type_id("NVIDIA GH200 480GB"), "nvidia-gh200");
  EXPECT_EQ(gpu_type_id("NVIDIA B200"), "nvidia-b200");
  EXPECT_EQ(gpu_type_id("NVIDIA A100-SXM4-80GB"), "nvidia-a100");
  EXPECT_EQ(gpu_type_id("NVIDIA A100 80GB PCIe"), "nvidia-a100");
  EXPECT_EQ(gpu_type_id("NVIDIA A10G"), "nvidia-a10g");
  EXPECT_EQ(gpu_type_id("NVIDIA A10"), "nvidia-a10");
  EXPECT_EQ(gpu_type_id("NVIDIA L4"), "nvidia-l4");
  EXPECT_EQ(gpu_type_id("NVIDIA L40S"), "nvidia-l40s");
  EXPECT_EQ(gpu_type_id("NVIDIA L40"), "nvidia-l40");
  EXPECT_EQ(gpu_type_id("Tesla T4"), "nvidia-t4");
  EXPECT_EQ(gpu_type_id("Tesla V100-SXM2-32GB"), "nvidia-v100");
  EXPECT_EQ(gpu_type_id("AMD Instinct MI300X"), "amd-mi300x");
  EXPECT_EQ(gpu_type_id("AMD Instinct MI250X"), "amd-mi250");
  EXPECT_EQ(gpu_type_id("NVIDIA GeForce RTX 4090"), "nvidia-rtx-4090");
}

TEST(PciBusId, NvmlAndHwlocFormsCompareEqual) {
  EXPECT_EQ(canonical_pci_bus_id("00000000:1B:00.0"), "0000:1b:00.0");
  EXPECT_EQ(canonical_pci_bus_id("0000:1b:00.0"), "0000:1b:00.0");
}

TEST(Units, DecimalGigabytesRoundedDown) {
  EXPECT_DOUBLE_EQ(bytes_to_gb(85520809984ULL), 85.5);  // H100 80GB: meets an 80 GB request
  EXPECT_DOUBLE_EQ(bytes_to_gb(16106127360ULL), 16.1);  // T4
  EXPECT_EQ(cuda_version_string(12040), "12.4");
  EXPECT_EQ(cuda_version_string(11080), "11.8");
}

TEST(GpuInventory, FixtureRoundTripsThroughJson) {
  const auto inventory = load_fixture("dgx-h100.json");
  const nlohmann::json once = inventory;
  const nlohmann::json twice = once.get<RecordedGpuInventory>();
  EXPECT_EQ(once, twice);
  EXPECT_EQ(once, read_json_file(testing::fixture_path("nvml/dgx-h100.json").string()));
}

TEST(GpuMapping, DgxH100IsEightNvlinkedHealthyH100s) {
  const auto caps = map_gpu_inventory(load_fixture("dgx-h100.json"));
  EXPECT_EQ(caps.gpu["type"], "nvidia-h100");
  EXPECT_EQ(caps.gpu["count"], 8);
  EXPECT_DOUBLE_EQ(caps.gpu["memory_gb"].get<double>(), 85.5);
  EXPECT_EQ(caps.gpu["compute_capability"], "9.0");
  EXPECT_EQ(caps.gpu["interconnect"], "nvlink");  // through the NVSwitch fabric
  EXPECT_EQ(caps.labels["nvidia.com/driver-version"], "550.54.15");
  EXPECT_EQ(caps.labels["nvidia.com/cuda-version"], "12.4");
  ASSERT_EQ(caps.devices.size(), 8u);
  const auto& device5 = caps.devices[5];
  EXPECT_EQ(device5["index"], 5);
  EXPECT_EQ(device5["numa_node"], 1);
  EXPECT_EQ(device5["pci_bus_id"], "0000:ab:00.0");
  EXPECT_EQ(device5["nvlink_peers"], nlohmann::json({0, 1, 2, 3, 4, 6, 7}));
  EXPECT_TRUE(device5["healthy"].get<bool>());
}

TEST(GpuMapping, A100PcieWithBridgedPairsIsPcieAndDropsTheSickGpu) {
  const auto caps = map_gpu_inventory(load_fixture("a100-pcie-4x.json"));
  EXPECT_EQ(caps.gpu["type"], "nvidia-a100");
  EXPECT_EQ(caps.gpu["count"], 4);  // all devices; GPU 3 is marked unhealthy below
  EXPECT_EQ(caps.gpu["interconnect"], "pcie");  // 0-1 bridged, 2-3 bridged, but GPU 3 is sick
  EXPECT_EQ(caps.gpu["compute_capability"], "8.0");
  EXPECT_EQ(caps.labels["nvidia.com/cuda-version"], "12.2");
  ASSERT_EQ(caps.devices.size(), 4u);
  EXPECT_EQ(caps.devices[0]["nvlink_peers"], nlohmann::json({1}));
  EXPECT_EQ(caps.devices[2]["nvlink_peers"], nlohmann::json({3}));
  EXPECT_FALSE(caps.devices[3]["healthy"].get<bool>());
  EXPECT_TRUE(caps.devices[0]["healthy"].get<bool>());
}

TEST(GpuMapping, FullyBridgedPairIsNvlink) {
  auto inventory = load_fixture("a100-pcie-4x.json");
  inventory.gpus.resize(2);
  EXPECT_EQ(map_gpu_inventory(inventory).gpu["interconnect"], "nvlink");
}

TEST(GpuMapping, HealthSignals) {
  RecordedGpu gpu;
  EXPECT_TRUE(is_gpu_healthy(gpu));  // ECC unsupported (-1) is not a fault
  gpu.retired_pages_pending = true;
  EXPECT_FALSE(is_gpu_healthy(gpu));
  gpu.retired_pages_pending = false;
  gpu.query_failed = true;
  EXPECT_FALSE(is_gpu_healthy(gpu));
}

TEST(GpuMapping, SickGpuDoesNotLowerTheAggregates) {
  auto inventory = load_fixture("a100-pcie-4x.json");
  inventory.gpus[3].memory_total_bytes = 42949672960ULL;  // the sick card is also the small one
  inventory.gpus[3].cuda_compute_capability = {7, 5};
  const auto caps = map_gpu_inventory(inventory);
  EXPECT_DOUBLE_EQ(caps.gpu["memory_gb"].get<double>(), 85.8);
  EXPECT_EQ(caps.gpu["compute_capability"], "8.0");
}

TEST(GpuMapping, AllSickGpusAreStillListedButUnhealthy) {
  auto inventory = load_fixture("a100-pcie-4x.json");
  for (auto& gpu : inventory.gpus) gpu.query_failed = true;
  const auto caps = map_gpu_inventory(inventory);
  EXPECT_EQ(caps.gpu["count"], 4);
  for (const auto& device : caps.devices) EXPECT_FALSE(device["healthy"].get<bool>());
}

}  // namespace
}  // namespace ojs::worker
