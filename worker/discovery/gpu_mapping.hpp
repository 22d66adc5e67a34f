// Turns raw driver values (RecordedGpuInventory) into the capability
// vocabulary the broker matches on: well-known `vendor-model` ids, GB figures,
// "major.minor" compute capability, NVLink topology and device health.
#pragma once
#include "worker/discovery/gpu_inventory.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace ojs::worker {

// "NVIDIA H100 80GB HBM3" -> "nvidia-h100", "AMD Instinct MI300X" -> "amd-mi300x".
// Unknown models become "<vendor>-<slug of the name>" so they stay matchable.
std::string gpu_type_id(std::string_view marketing_name);

// "00000000:18:00.0" (NVML) and "0000:18:00.0" (hwloc, sysfs) -> "0000:18:00.0".
std::string canonical_pci_bus_id(std::string_view bus_id);

// Decimal gigabytes rounded down to 0.1. Decimal, because NVML totals sit just
// under the GiB on the box (an "80GB" H100 reports 79.6 GiB = 85.5 GB): in GB
// every card meets the number it is sold with, so an 80 GB job matches it.
double bytes_to_gb(std::uint64_t bytes);

// Driver/CUDA versions as labels; e.g. 12040 -> "12.4".
std::string cuda_version_string(int cuda_driver_version);

// Why a GPU must not take jobs (lost, uncorrected ECC errors, pages pending
// retirement, compute mode prohibited), or "" when it may.
std::string gpu_health_fault(const RecordedGpu& gpu);
bool is_gpu_healthy(const RecordedGpu& gpu);

// nvmlComputeMode_t as nvidia-smi spells it: default, exclusive_thread,
// prohibited, exclusive_process.
std::string compute_mode_name(int mode);

// The MIG profile as nvidia-smi names it: compute slices, "g.", memory rounded
// up to whole GiB ("1g.10gb", "3g.40gb"); "1c.2g.20gb" when the compute
// instance is smaller than its GPU instance.
std::string mig_profile_name(const RecordedMigDevice& mig);

struct GpuCapabilities {
  nlohmann::json gpu = nullptr;                       // {type,count,memory_gb,compute_capability,interconnect} or null
  nlohmann::json devices = nlohmann::json::array();   // one entry per GPU, healthy or not
  nlohmann::json labels = nlohmann::json::object();   // nvidia.com/driver-version, nvidia.com/cuda-version, ...
};

// Whole GPUs keep their NVML index; the MIG devices of a MIG-enabled GPU are
// advertised instead of it, numbered after all GPUs, with mig_profile,
// parent_index and compute_fraction (compute slices / the parent's maximum).
// gpu.count is every device (the broker checks it against devices[]); type,
// memory_gb (smallest) and compute_capability (lowest) come from the healthy
// devices. Health is per device: the broker never assigns one marked unhealthy.
GpuCapabilities map_gpu_inventory(const RecordedGpuInventory& inventory);

}  // namespace ojs::worker
