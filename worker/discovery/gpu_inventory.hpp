// Raw GPU values exactly as the driver library reports them, before any
// interpretation. Kept separate from the mapping so that inventories recorded
// on real machines can be replayed as test fixtures (see tests/fixtures/nvml).
#pragma once
#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace ojs::worker {

struct RecordedNvLink {
  unsigned link = 0;
  bool active = false;
  std::string remote_pci_bus_id;            // as NVML prints it, e.g. "00000000:18:00.0"
  std::string remote_device_type = "gpu";   // "gpu", "switch", "ibmnpu" or "unknown"
};

// One MIG device (GPU instance + compute instance) of a MIG-enabled GPU.
struct RecordedMigDevice {
  unsigned index = 0;                          // nvmlDeviceGetMigDeviceHandleByIndex slot on the parent
  std::string uuid;                            // "MIG-..." (what CUDA_VISIBLE_DEVICES takes)
  std::uint64_t memory_total_bytes = 0;        // nvmlDeviceGetMemoryInfo on the MIG handle
  unsigned gpu_instance_slice_count = 0;       // nvmlDeviceGetAttributes_v2
  unsigned compute_instance_slice_count = 0;
  unsigned multiprocessor_count = 0;
  bool query_failed = false;
};

struct RecordedGpu {
  unsigned index = 0;
  std::string name;                 // nvmlDeviceGetName, e.g. "NVIDIA H100 80GB HBM3"
  std::string uuid;
  std::uint64_t memory_total_bytes = 0;
  std::array<int, 2> cuda_compute_capability{0, 0};  // {major, minor}
  std::string pci_bus_id;
  int numa_node = -1;               // joined in from hwloc; -1 when unknown
  std::vector<RecordedNvLink> nvlinks;
  std::int64_t ecc_uncorrected_volatile = -1;  // -1: ECC not supported or not enabled
  bool retired_pages_pending = false;
  bool query_failed = false;        // a basic query failed: the device is lost or broken
  int compute_mode = 0;             // nvmlDeviceGetComputeMode: 0 default, 1 exclusive thread, 2 prohibited, 3 exclusive process
  bool mig_supported = false;       // nvmlDeviceGetMigMode answered (NOT_SUPPORTED on GPUs without MIG)
  bool mig_enabled = false;         // nvmlDeviceGetMigMode current mode
  bool mig_pending_enabled = false; // its pending mode: what the GPU becomes after its next reset
  unsigned max_mig_devices = 0;     // nvmlDeviceGetMaxMigDeviceCount (7 on A100/H100)
  std::vector<RecordedMigDevice> mig_devices;
};

struct RecordedGpuInventory {
  std::string driver_version;       // nvmlSystemGetDriverVersion, e.g. "550.54.15"
  int cuda_driver_version = 0;      // nvmlSystemGetCudaDriverVersion, e.g. 12040
  std::vector<RecordedGpu> gpus;
};

// JSON keys are the field names; missing keys keep their defaults, so
// hand-trimmed fixtures stay valid.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RecordedNvLink, link, active, remote_pci_bus_id, remote_device_type)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RecordedMigDevice, index, uuid, memory_total_bytes, gpu_instance_slice_count,
                                                compute_instance_slice_count, multiprocessor_count, query_failed)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RecordedGpu, index, name, uuid, memory_total_bytes, cuda_compute_capability,
                                                pci_bus_id, numa_node, nvlinks, ecc_uncorrected_volatile,
                                                retired_pages_pending, query_failed, compute_mode, mig_supported,
                                                mig_enabled, mig_pending_enabled, max_mig_devices, mig_devices)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RecordedGpuInventory, driver_version, cuda_driver_version, gpus)

}  // namespace ojs::worker
