#include "worker/discovery/gpu_sharing.hpp"

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace ojs::worker {

bool mps_daemon_running() {
  const char* dir = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
  std::error_code ignored;
  return std::filesystem::exists(std::filesystem::path(dir && *dir ? dir : "/tmp/nvidia-mps") / "control", ignored);
}

GpuSharing resolve_gpu_sharing(const GpuSharingConfig& config, bool daemon_running, const char* env_percentage) {
  GpuSharing sharing;
  sharing.mps = config.mode == "mps" || (config.mode == "auto" && daemon_running);
  if (!sharing.mps) return sharing;
  int percentage = config.active_thread_percentage;
  if (percentage == 0 && env_percentage && *env_percentage) percentage = std::atoi(env_percentage);
  if (percentage == 0) percentage = 50;
  if (percentage < 1 || percentage > 100)
    throw std::invalid_argument("gpu_sharing.active_thread_percentage must be between 1 and 100");
  sharing.active_thread_percentage = percentage;
  return sharing;
}

nlohmann::json apply_gpu_sharing(nlohmann::json capabilities, const GpuSharing& sharing) {
  auto devices = capabilities.find("devices");
  if (devices == capabilities.end() || !devices->is_array() || devices->empty()) return capabilities;
  for (auto& device : *devices) {
    device["sharing"] = sharing.mps ? "mps" : "exclusive";
    if (!sharing.mps) continue;
    device["mps_active_thread_percentage"] = sharing.active_thread_percentage;
    device["max_jobs"] = sharing.max_jobs();
  }
  auto& labels = capabilities["labels"];
  labels["nvidia.com/gpu.sharing"] = sharing.mps ? "mps" : "exclusive";
  if (sharing.mps) labels["nvidia.com/mps.active-thread-percentage"] = std::to_string(sharing.active_thread_percentage);
  return capabilities;
}

}  // namespace ojs::worker
