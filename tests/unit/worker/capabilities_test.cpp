#include "worker/config/json_file.hpp"
#include "worker/discovery/capabilities.hpp"
#include "test_helpers.hpp"

#include <gtest/gtest.h>

namespace ojs::worker {
namespace {

HardwareSnapshot dgx_snapshot() {
  HardwareSnapshot snapshot;
  snapshot.host.logical_cpus = 224;
  snapshot.host.physical_cores = 112;
  snapshot.host.numa_nodes = 2;
  snapshot.host.memory_bytes = 2'000'000'000'000ULL;
  snapshot.gpus = read_json_file(testing::fixture_path("nvml/dgx-h100.json").string()).get<RecordedGpuInventory>();
  for (auto& gpu : snapshot.gpus->gpus) gpu.numa_node = -1;  // forget the recorded value:
  snapshot.host.numa_node_by_pci_bus["0000:9a:00.0"] = 1;    // hwloc must fill it in
  snapshot.shm = FilesystemCapacity{64'000'000'000ULL, 64'000'000'000ULL};
  snapshot.scratch = FilesystemCapacity{4'000'000'000'000ULL, 3'500'000'000'000ULL};
  return snapshot;
}

TEST(Capabilities, HardwareLayerDescribesHostAndGpus) {
  const auto caps = finalize_capabilities(hardware_capabilities(dgx_snapshot()));
  EXPECT_EQ(caps["accelerator"], "gpu");
  EXPECT_EQ(caps["cpu_cores"], 224);
  EXPECT_EQ(caps["cpu_physical_cores"], 112);
  EXPECT_DOUBLE_EQ(caps["memory_gb"].get<double>(), 2000.0);
  EXPECT_DOUBLE_EQ(caps["shm_size_gb"].get<double>(), 64.0);
  EXPECT_DOUBLE_EQ(caps["storage_gb"].get<double>(), 3500.0);
  EXPECT_EQ(caps["gpu"]["count"], 8);
  EXPECT_EQ(caps["devices"][4]["numa_node"], 1);   // joined from hwloc PCI locality
  EXPECT_EQ(caps["devices"][0]["numa_node"], -1);  // unknown to hwloc
  EXPECT_EQ(caps["labels"]["nvidia.com/driver-version"], "550.54.15");
}

TEST(Capabilities, CpuOnlyHostIsCpu) {
  HardwareSnapshot snapshot;
  snapshot.host.logical_cpus = 2;
  const auto caps = finalize_capabilities(hardware_capabilities(snapshot));
  EXPECT_EQ(caps["accelerator"], "cpu");
  EXPECT_FALSE(caps.contains("gpu"));
}

TEST(Capabilities, ConfigAddsModelsRuntimesAndLabels) {
  WorkerConfig config = parse_worker_config(nlohmann::json::parse(R"({
    "labels": {"region": "us-east-1"},
    "models": [{"model_id": "llama-3.1-8b", "model_version": "1.0", "model_format": "safetensors", "path": "/m"}],
    "runtimes": ["pytorch", "vllm"]})"));
  const auto caps = apply_config_layer(hardware_capabilities(dgx_snapshot()), config);
  EXPECT_EQ(caps["labels"]["region"], "us-east-1");
  EXPECT_EQ(caps["labels"]["nvidia.com/cuda-version"], "12.4");
  EXPECT_EQ(caps["runtimes"], nlohmann::json({"pytorch", "vllm"}));
  EXPECT_EQ(caps["models_loaded"][0],
            nlohmann::json({{"model_id", "llama-3.1-8b"}, {"model_version", "1.0"}, {"model_format", "safetensors"}}));
}

TEST(Capabilities, FileValuesWinAndNullDeletes) {
  const auto file = nlohmann::json::parse(R"({
    "gpu": {"memory_gb": 80}, "labels": {"zone": "b", "nvidia.com/driver-version": null}, "storage_gb": 10})");
  const auto caps = finalize_capabilities(apply_capabilities_file(hardware_capabilities(dgx_snapshot()), file));
  EXPECT_EQ(caps["gpu"]["memory_gb"], 80);
  EXPECT_EQ(caps["gpu"]["type"], "nvidia-h100");  // untouched fields stay
  EXPECT_EQ(caps["labels"]["zone"], "b");
  EXPECT_FALSE(caps["labels"].contains("nvidia.com/driver-version"));
  EXPECT_EQ(caps["storage_gb"], 10);
}

TEST(Capabilities, SimulatedFileIgnoresRealHardware) {
  testing::ScratchDir dir("simulate");
  const auto path = dir.path() / "caps.json";
  write_text_file_atomically(path.string(), R"({"simulate": true,
    "gpu": {"type": "nvidia-a100", "count": 4, "memory_gb": 80, "compute_capability": "8.0", "interconnect": "nvlink"},
    "cpu_cores": 64, "memory_gb": 512})");
  WorkerConfig config;
  config.labels = {{"pool", "demo"}};
  const auto caps = build_capabilities(config, path.string());
  EXPECT_EQ(caps["accelerator"], "gpu");  // inferred from the simulated GPUs
  EXPECT_EQ(caps["gpu"]["count"], 4);
  EXPECT_EQ(caps["cpu_cores"], 64);
  EXPECT_FALSE(caps.contains("simulate"));
  EXPECT_FALSE(caps.contains("cpu_physical_cores"));  // nothing discovered
  EXPECT_EQ(caps["labels"]["pool"], "demo");
  // A count and no device list: devices 0..3, explicit, all NVLink peers (gpu.interconnect nvlink).
  ASSERT_EQ(caps["devices"].size(), 4u);
  EXPECT_EQ(caps["devices"][2], nlohmann::json::parse(R"({"index": 2, "memory_gb": 80, "nvlink_peers": [0, 1, 3]})"));
}

TEST(Capabilities, SimulatedFixtureForDemosAndIntegrationTests) {
  const auto caps = build_capabilities(WorkerConfig{}, testing::fixture_path("worker/simulated-4xa100.json").string());
  EXPECT_EQ(caps["gpu"]["count"], 4);
  EXPECT_EQ(caps["devices"].size(), 4u);
  EXPECT_EQ(caps["models_loaded"][0]["model_id"], "llama-3.1-8b");
}

TEST(Capabilities, RealDiscoveryOnThisMachineFindsCpusAndMemory) {
  WorkerConfig config;
  config.nvml_library = "libnvidia-ml-that-does-not-exist.so";
  const auto caps = build_capabilities(config, "");
  EXPECT_GE(caps["cpu_cores"].get<int>(), 1);
  EXPECT_GT(caps["memory_gb"].get<double>(), 0.0);
  EXPECT_EQ(caps["accelerator"], "cpu");
}

}  // namespace
}  // namespace ojs::worker
