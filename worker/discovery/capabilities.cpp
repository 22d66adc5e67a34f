#include "worker/discovery/capabilities.hpp"

#include "worker/config/json_file.hpp"
#include "worker/discovery/gpu_mapping.hpp"
#include "worker/discovery/gpu_sharing.hpp"
#include "worker/discovery/nvml_loader.hpp"

#include <spdlog/spdlog.h>

#include <cstdlib>

namespace ojs::worker {

HardwareSnapshot probe_hardware(const WorkerConfig& config) {
  HardwareSnapshot snapshot;
  try {
    snapshot.host = discover_host_topology();
  } catch (const std::exception& e) {
    spdlog::warn("discovery: hwloc unavailable: {}", e.what());
  }
  auto nvml = load_nvml_inventory(config.nvml_library);
  if (nvml.inventory) {
    snapshot.gpus = std::move(nvml.inventory);
  } else {
    spdlog::info("discovery: no NVML ({})", nvml.unavailable_reason);
    if (!snapshot.host.numa_node_by_pci_bus.empty())
      spdlog::warn("discovery: hwloc sees {} GPU-class PCI device(s) but NVML is unusable; advertising none",
                   snapshot.host.numa_node_by_pci_bus.size());
  }
  snapshot.shm = filesystem_capacity("/dev/shm");
  snapshot.scratch = filesystem_capacity(config.scratch_dir.empty() ? config.work_dir : config.scratch_dir);
  return snapshot;
}

nlohmann::json hardware_capabilities(HardwareSnapshot snapshot) {
  nlohmann::json caps = nlohmann::json::object();
  caps["cpu_cores"] = snapshot.host.logical_cpus;  // schedulable CPUs, the Kubernetes notion of a core
  caps["cpu_physical_cores"] = snapshot.host.physical_cores;
  caps["numa_nodes"] = snapshot.host.numa_nodes;
  caps["memory_gb"] = bytes_to_gb(snapshot.host.memory_bytes);
  if (snapshot.scratch) caps["storage_gb"] = bytes_to_gb(snapshot.scratch->available_bytes);
  if (snapshot.shm) caps["shm_size_gb"] = bytes_to_gb(snapshot.shm->total_bytes);
  caps["labels"] = nlohmann::json::object();
  if (snapshot.gpus) {
    for (auto& gpu : snapshot.gpus->gpus) {
      const auto locality = snapshot.host.numa_node_by_pci_bus.find(canonical_pci_bus_id(gpu.pci_bus_id));
      if (locality != snapshot.host.numa_node_by_pci_bus.end()) gpu.numa_node = locality->second;
    }
    auto mapped = map_gpu_inventory(*snapshot.gpus);
    if (!mapped.gpu.is_null()) caps["gpu"] = std::move(mapped.gpu);
    if (!mapped.devices.empty()) caps["devices"] = std::move(mapped.devices);
    caps["labels"] = std::move(mapped.labels);
  }
  return caps;
}

nlohmann::json apply_config_layer(nlohmann::json capabilities, const WorkerConfig& config) {
  if (!config.models.empty()) capabilities["models_loaded"] = models_loaded_json(config.models);
  if (!config.runtimes.empty()) capabilities["runtimes"] = config.runtimes;
  if (!capabilities.contains("labels")) capabilities["labels"] = nlohmann::json::object();
  capabilities["labels"].update(config.labels);
  return capabilities;
}

bool requests_simulation(const nlohmann::json& file) { return file.value("simulate", false); }

nlohmann::json apply_capabilities_file(nlohmann::json capabilities, const nlohmann::json& file) {
  nlohmann::json patch = file;
  patch.erase("simulate");
  capabilities.merge_patch(patch);
  return capabilities;
}

nlohmann::json enumerate_counted_devices(nlohmann::json capabilities) {
  const auto gpu = capabilities.find("gpu");
  if (gpu == capabilities.end() || !gpu->is_object() || capabilities.contains("devices")) return capabilities;
  const auto count_field = gpu->find("count");
  if (count_field == gpu->end() || !count_field->is_number_integer() || count_field->get<int>() <= 0) return capabilities;
  const int count = count_field->get<int>();
  const bool nvlink = gpu->value("interconnect", std::string()) == "nvlink";
  nlohmann::json devices = nlohmann::json::array();
  for (int i = 0; i < count; ++i) {
    nlohmann::json device = {{"index", i}};
    if (auto memory = gpu->find("memory_gb"); memory != gpu->end() && memory->is_number()) device["memory_gb"] = *memory;
    if (nvlink) {
      device["nvlink_peers"] = nlohmann::json::array();
      for (int peer = 0; peer < count; ++peer)
        if (peer != i) device["nvlink_peers"].push_back(peer);
    }
    devices.push_back(std::move(device));
  }
  capabilities["devices"] = std::move(devices);
  spdlog::info("capabilities give gpu.count {} and no device list: advertising devices 0..{}", count, count - 1);
  return capabilities;
}

nlohmann::json finalize_capabilities(nlohmann::json capabilities) {
  capabilities = enumerate_counted_devices(std::move(capabilities));
  if (!capabilities.contains("accelerator")) {
    const bool has_gpu = capabilities.contains("gpu") && capabilities["gpu"].is_object() &&
                         capabilities["gpu"].value("count", 0) > 0;
    capabilities["accelerator"] = has_gpu ? "gpu" : "cpu";
  }
  return capabilities;
}

nlohmann::json build_capabilities(const WorkerConfig& config, const std::string& capabilities_file) {
  nlohmann::json file = nlohmann::json::object();
  if (!capabilities_file.empty()) {
    file = read_json_file(capabilities_file);
    if (!file.is_object()) throw std::runtime_error(capabilities_file + ": capabilities must be a JSON object");
  }
  nlohmann::json caps = nlohmann::json::object();
  if (!requests_simulation(file)) {
    caps = hardware_capabilities(probe_hardware(config));
    caps = apply_gpu_sharing(std::move(caps), resolve_gpu_sharing(config.gpu_sharing, mps_daemon_running(),
                                                                   std::getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE")));
  }
  caps = apply_config_layer(std::move(caps), config);
  return finalize_capabilities(apply_capabilities_file(std::move(caps), file));
}

}  // namespace ojs::worker
