// The worker's configuration file (--config): commands per job type, what the
// node advertises beyond its hardware (models, runtimes, labels) and execution
// tunables. Command-line flags override these values.
#pragma once
#include "worker/config/command_table.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace ojs::worker {

struct ConfiguredModel {
  std::string model_id;
  std::string model_version;
  std::string model_format;
  std::string path;  // local weights; default <models_dir>/<model_id>
};

// "gpu_sharing": how jobs share a GPU (see discovery/gpu_sharing.hpp).
struct GpuSharingConfig {
  std::string mode = "auto";         // auto (MPS when its control daemon runs), exclusive, mps
  int active_thread_percentage = 0;  // 0: $CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, else 50
};

struct WorkerConfig {
  CommandTable commands;
  nlohmann::json labels = nlohmann::json::object();
  std::vector<ConfiguredModel> models;
  std::vector<std::string> runtimes;
  std::string models_dir;
  std::string work_dir = "/tmp/ojs-worker";
  std::string scratch_dir;      // storage_gb is measured here; default work_dir
  std::string nvml_library = "libnvidia-ml.so.1";
  unsigned concurrency = 1;
  double default_timeout_s = 0;  // 0: no limit unless the job sets one
  double kill_grace_s = 10;      // SIGTERM -> SIGKILL on timeout and release
  double drain_timeout_s = 60;   // graceful shutdown: wait this long for jobs
  double checkpoint_poll_s = 5;
  bool keep_work_dirs = false;
  GpuSharingConfig gpu_sharing;  // "gpu_sharing": {"mode": "auto|exclusive|mps", "active_thread_percentage": 50}
};

WorkerConfig parse_worker_config(const nlohmann::json& document);
// Throws std::runtime_error naming the file when it cannot be read or parsed.
WorkerConfig load_worker_config(const std::string& path);

// models_loaded[] entries of the capabilities body.
nlohmann::json models_loaded_json(const std::vector<ConfiguredModel>& models);

}  // namespace ojs::worker
