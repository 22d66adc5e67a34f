// Reads the GPU inventory from NVML, loaded at run time with dlopen so that the
// worker builds and runs on machines without the NVIDIA driver. The loader only
// copies raw values into a RecordedGpuInventory; gpu_mapping interprets them.
#pragma once
#include "worker/discovery/gpu_inventory.hpp"

#include <optional>
#include <string>

namespace ojs::worker {

struct NvmlLoadResult {
  std::optional<RecordedGpuInventory> inventory;  // empty when NVML is unusable
  std::string unavailable_reason;                 // why, for the log
};

NvmlLoadResult load_nvml_inventory(const std::string& library_name = "libnvidia-ml.so.1");

}  // namespace ojs::worker
