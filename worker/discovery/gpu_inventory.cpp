#include "worker/discovery/gpu_inventory.hpp"

namespace ojs::worker {

// Optional fields fall back to their defaults so that hand-trimmed fixtures stay valid.
template <typename T>
static void read_optional(const nlohmann::json& in, const char* key, T& target) {
  if (auto it = in.find(key); it != in.end() && !it->is_null()) it->get_to(target);
}

void to_json(nlohmann::json& out, const RecordedNvLink& link) {
  out = {{"link", link.link},
         {"active", link.active},
         {"remote_pci_bus_id", link.remote_pci_bus_id},
         {"remote_device_type", link.remote_device_type}};
}

void from_json(const nlohmann::json& in, RecordedNvLink& link) {
  read_optional(in, "link", link.link);
  read_optional(in, "active", link.active);
  read_optional(in, "remote_pci_bus_id", link.remote_pci_bus_id);
  read_optional(in, "remote_device_type", link.remote_device_type);
}

void to_json(nlohmann::json& out, const RecordedGpu& gpu) {
  out = {{"index", gpu.index},
         {"name", gpu.name},
         {"uuid", gpu.uuid},
         {"memory_total_bytes", gpu.memory_total_bytes},
         {"cuda_compute_capability", {gpu.cc_major, gpu.cc_minor}},
         {"pci_bus_id", gpu.pci_bus_id},
         {"numa_node", gpu.numa_node},
         {"nvlinks", gpu.nvlinks},
         {"ecc_uncorrected_volatile", gpu.ecc_uncorrected_volatile},
         {"retired_pages_pending", gpu.retired_pages_pending},
         {"query_failed", gpu.query_failed}};
}

void from_json(const nlohmann::json& in, RecordedGpu& gpu) {
  read_optional(in, "index", gpu.index);
  read_optional(in, "name", gpu.name);
  read_optional(in, "uuid", gpu.uuid);
  read_optional(in, "memory_total_bytes", gpu.memory_total_bytes);
  if (auto it = in.find("cuda_compute_capability"); it != in.end() && it->is_array() && it->size() == 2) {
    gpu.cc_major = (*it)[0].get<int>();
    gpu.cc_minor = (*it)[1].get<int>();
  }
  read_optional(in, "pci_bus_id", gpu.pci_bus_id);
  read_optional(in, "numa_node", gpu.numa_node);
  read_optional(in, "nvlinks", gpu.nvlinks);
  read_optional(in, "ecc_uncorrected_volatile", gpu.ecc_uncorrected_volatile);
  read_optional(in, "retired_pages_pending", gpu.retired_pages_pending);
  read_optional(in, "query_failed", gpu.query_failed);
}

void to_json(nlohmann::json& out, const RecordedGpuInventory& inventory) {
  out = {{"driver_version", inventory.driver_version},
         {"cuda_driver_version", inventory.cuda_driver_version},
         {"gpus", inventory.gpus}};
}

void from_json(const nlohmann::json& in, RecordedGpuInventory& inventory) {
  read_optional(in, "driver_version", inventory.driver_version);
  read_optional(in, "cuda_driver_version", inventory.cuda_driver_version);
  read_optional(in, "gpus", inventory.gpus);
}

}  // namespace ojs::worker
