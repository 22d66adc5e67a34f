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
};

struct RecordedGpuInventory {
  std::string driver_version;       // nvmlSystemGetDriverVersion, e.g. "550.54.15"
  int cuda_driver_version = 0;      // nvmlSystemGetCudaDriverVersion, e.g. 12040
  std::vector<RecordedGpu> gpus;
};

// JSON keys are the field names; missing keys keep their defaults, so
// hand-trimmed fixtures stay valid.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RecordedNvLink, link, active, remote_pci_bus_id, remote_device_type)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RecordedGpu, index, name, uuid, memory_total_bytes, cuda_compute_capability,
                                                pci_bus_id, numa_node, nvlinks, ecc_uncorrected_volatile,
                                                retired_pages_pending, query_failed)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RecordedGpuInventory, driver_version, cuda_driver_version, gpus)

}  // namespace ojs::worker
