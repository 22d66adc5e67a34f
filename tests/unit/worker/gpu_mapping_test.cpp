#include "worker/config/json_file.hpp"
#include "worker/discovery/gpu_mapping.hpp"
#include "worker/discovery/gpu_sharing.hpp"
#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <cmath>

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

TEST(GpuMapping, ProhibitedComputeModeTakesNoJobsAndSaysWhy) {
  RecordedGpu gpu;
  gpu.compute_mode = 2;  // nvidia-smi -c PROHIBITED
  EXPECT_FALSE(is_gpu_healthy(gpu));
  EXPECT_EQ(gpu_health_fault(gpu), "compute mode prohibited: no CUDA context can be created");
  auto inventory = load_fixture("a100-pcie-4x.json");
  inventory.gpus[1].compute_mode = 2;
  const auto caps = map_gpu_inventory(inventory);
  EXPECT_FALSE(caps.devices[1]["healthy"].get<bool>());
  EXPECT_EQ(caps.devices[1]["compute_mode"], "prohibited");
  EXPECT_EQ(caps.devices[1]["health_reason"], "compute mode prohibited: no CUDA context can be created");
  EXPECT_EQ(caps.devices[0]["compute_mode"], "default");
  EXPECT_FALSE(caps.devices[0].contains("health_reason"));
  EXPECT_EQ(compute_mode_name(3), "exclusive_process");
}

TEST(GpuMapping, MigCapableGpuUsedWholeSaysSoAndItsPendingMode) {
  auto inventory = load_fixture("dgx-h100.json");
  inventory.gpus[2].mig_pending_enabled = true;  // nvidia-smi -mig 1 issued, reset not yet done
  const auto caps = map_gpu_inventory(inventory);
  EXPECT_EQ(caps.labels["nvidia.com/mig.capable"], "true");
  EXPECT_FALSE(caps.labels.contains("nvidia.com/mig.enabled"));
  EXPECT_EQ(caps.devices[0]["mig_mode"], "disabled");
  EXPECT_FALSE(caps.devices[0].contains("mig_mode_pending"));
  EXPECT_EQ(caps.devices[2]["mig_mode_pending"], "enabled");
  EXPECT_EQ(caps.gpu["count"], 8);  // still advertised whole until the reset

  for (auto& gpu : inventory.gpus) gpu.mig_supported = false;  // e.g. an L4 or a T4
  const auto plain = map_gpu_inventory(inventory);
  EXPECT_EQ(plain.labels["nvidia.com/mig.capable"], "false");
  EXPECT_FALSE(plain.devices[0].contains("mig_mode"));
}

// Recorded on real machines (scripts/capture-gpu.sh, run by scripts/gpu-e2e.sh; see
// NAME.capture.log, NAME.e2e.log and the nvidia-smi files beside them): the raw NVML
// values must map to what the worker advertised there, and agree with nvidia-smi.
struct RealCapture {
  std::string name;      // fixture prefix in tests/fixtures/nvml
  std::string type;      // what the worker called the GPU
  double smi_total_mib;  // nvidia-smi's memory.total on that machine
};
void PrintTo(const RealCapture& capture, std::ostream* os) { *os << capture.name; }

class RealGpuCapture : public ::testing::TestWithParam<RealCapture> {
 protected:
  nlohmann::json advertised(const std::string& suffix) const {
    return read_json_file(testing::fixture_path("nvml/" + GetParam().name + suffix).string());
  }
};

TEST_P(RealGpuCapture, RawNvmlValuesMapToTheWorkersAdvertisement) {
  const auto inventory = load_fixture(GetParam().name + ".json");
  const auto advertised = this->advertised(".capabilities.json");
  const auto caps = map_gpu_inventory(inventory);
  EXPECT_EQ(caps.gpu, advertised["gpu"]);
  ASSERT_EQ(caps.devices.size(), 1u);
  auto device = advertised["devices"][0];
  device.erase("sharing");  // added by apply_gpu_sharing
  auto mapped = caps.devices[0];
  mapped.erase("numa_node");  // joined in from hwloc on the machine
  device.erase("numa_node");
  EXPECT_EQ(mapped, device);
  for (const auto& [key, value] : caps.labels.items()) EXPECT_EQ(advertised["labels"][key], value) << key;

  // nvidia-smi on the same machine: MiB as given, 9.0, MIG Disabled/Disabled, compute mode Default.
  EXPECT_EQ(caps.gpu["type"], GetParam().type);
  EXPECT_DOUBLE_EQ(caps.gpu["memory_gb"].get<double>(), std::floor(GetParam().smi_total_mib * 1048576 / 1e8) / 10);
  EXPECT_EQ(caps.gpu["compute_capability"], "9.0");
  EXPECT_EQ(caps.devices[0]["mig_mode"], "disabled");
  EXPECT_EQ(caps.devices[0]["compute_mode"], "default");
  EXPECT_EQ(caps.labels["nvidia.com/mig.capable"], "true");
  EXPECT_EQ(caps.labels["nvidia.com/driver-version"], "580.159.04");
}

// The same machine while an MPS control daemon ran: the worker's "auto" sharing
// found it and advertised two jobs per GPU at the default 50 % of threads.
TEST_P(RealGpuCapture, WithItsMpsDaemonItAdvertisedTwoJobsPerGpu) {
  const auto with_mps = advertised(".mps.capabilities.json");
  const auto without = advertised(".capabilities.json");
  const auto shared = apply_gpu_sharing(without, resolve_gpu_sharing({}, true, nullptr));
  EXPECT_EQ(shared["devices"], with_mps["devices"]);
  EXPECT_EQ(shared["labels"], with_mps["labels"]);
  EXPECT_EQ(with_mps["devices"][0]["max_jobs"], 2);
}

INSTANTIATE_TEST_SUITE_P(Captures, RealGpuCapture,
                         ::testing::Values(RealCapture{"h200-1gpu", "nvidia-h200", 143771},
                                         RealCapture{"h100-1gpu", "nvidia-h100", 81559}),
                         [](const auto& info) { return info.param.name.substr(0, 4); });

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
