// Assembles the `capabilities` body the worker advertises in FETCH and
// heartbeat, in three layers, each overriding the one before:
//   1. discovered hardware (hwloc, NVML, statvfs),
//   2. the worker config (models_loaded, runtimes, labels),
//   3. an optional capabilities file (JSON merge patch: file values win, null
//      deletes; `"simulate": true` skips layer 1 entirely, for tests and demos).
#pragma once
#include "worker/config/worker_config.hpp"
#include "worker/discovery/filesystem_capacity.hpp"
#include "worker/discovery/gpu_inventory.hpp"
#include "worker/discovery/host_topology.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace ojs::worker {

struct HardwareSnapshot {
  HostTopology host;
  std::optional<RecordedGpuInventory> gpus;  // empty when NVML is absent
  std::optional<FilesystemCapacity> shm;
  std::optional<FilesystemCapacity> scratch;
};

// Reads the real machine. Never throws: what cannot be read is left out and logged.
HardwareSnapshot probe_hardware(const WorkerConfig& config);

// Pure: snapshot -> layer 1. GPU NUMA nodes are joined from hwloc's PCI locality.
nlohmann::json hardware_capabilities(HardwareSnapshot snapshot);

nlohmann::json apply_config_layer(nlohmann::json capabilities, const WorkerConfig& config);
nlohmann::json apply_capabilities_file(nlohmann::json capabilities, const nlohmann::json& file);
bool requests_simulation(const nlohmann::json& file);

// "accelerator" defaults to gpu when a GPU is advertised, else cpu. A gpu.count
// without a device list gets one (enumerate_counted_devices), logged.
nlohmann::json finalize_capabilities(nlohmann::json capabilities);

// Devices always explicit: gpu.count N and no "devices" give devices 0..N-1, each
// with gpu.memory_gb (type and compute capability come from gpu{} when parsed),
// all NVLink peers of each other when gpu.interconnect is nvlink. The broker then
// assigns indices, and CUDA_VISIBLE_DEVICES names them. Unchanged otherwise.
nlohmann::json enumerate_counted_devices(nlohmann::json capabilities);

// All layers; capabilities_file may be empty. Throws when the file is unreadable.
nlohmann::json build_capabilities(const WorkerConfig& config, const std::string& capabilities_file);

}  // namespace ojs::worker
