// Whether this node's GPUs are shared through the CUDA Multi-Process Service
// (MPS) or given to one job at a time, and how that is advertised: per device
// `sharing`, `mps_active_thread_percentage`, `max_jobs`, and the labels
// `nvidia.com/gpu.sharing` (mps | exclusive) and
// `nvidia.com/mps.active-thread-percentage`, which jobs select on.
#pragma once
#include "worker/config/worker_config.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

#include <string>

namespace ojs::worker {

struct GpuSharing {
  bool mps = false;
  int active_thread_percentage = 100;
  // Jobs per GPU: as many as the thread percentage allows side by side (50 -> 2).
  int max_jobs() const { return mps ? std::max(1, 100 / active_thread_percentage) : 1; }
};

// The MPS control daemon listens on $CUDA_MPS_PIPE_DIRECTORY/control
// (default /tmp/nvidia-mps/control).
bool mps_daemon_running();

// Throws std::invalid_argument on a percentage outside 1..100 (the config
// loader has already checked the mode).
GpuSharing resolve_gpu_sharing(const GpuSharingConfig& config, bool daemon_running, const char* env_percentage);

// Marks every advertised device and sets the labels (nothing without devices).
nlohmann::json apply_gpu_sharing(nlohmann::json capabilities, const GpuSharing& sharing);

}  // namespace ojs::worker
