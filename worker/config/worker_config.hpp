// The worker's configuration file (--config): commands per job type, what the
// node advertises beyond its hardware (models, runtimes, labels) and execution
// tunables. Command-line flags override these values.
#pragma once
#include "worker/config/command_table.hpp"
#include "worker/isolation/job_isolation.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
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
  // Each job's stdout/stderr is shipped to the broker every this many
  // seconds while it runs, and once more when it ends (0: not shipped); at most
  // log_max_bytes of it per look (the most recent: a flood is skipped to its end).
  double log_ship_interval_s = 1;
  std::uint64_t log_max_bytes = 1 << 20;
  GpuSharingConfig gpu_sharing;  // "gpu_sharing": {"mode": "auto|exclusive|mps", "active_thread_percentage": 50}
  // "isolation": {"mode": "auto|on|off", "cgroup_version": "auto|v1|v2", "cgroup_root", "dev_dir", "pids_max", "numa_cpus": {"0": "0-15"},
  //                "cuda_libraries": {"12.2": "/opt/cuda-12.2"}}
  IsolationConfig isolation;
  // GPU telemetry (NVML) is read every this many seconds (0: not read) and sent with
  // the devices; a device at or above max_gpu_temperature_c takes no new job until it
  // is 5 degrees below.
  double telemetry_interval_s = 5;
  double max_gpu_temperature_c = 85;
  // Checkpoints beyond a job's max_count under a scheme other than file:// are deleted
  // by this command, run once per URI with the URI appended (empty: left in place),
  // killed past checkpoint_retention_timeout_s.
  std::vector<std::string> checkpoint_retention_command;
  double checkpoint_retention_timeout_s = 60;
};

WorkerConfig parse_worker_config(const nlohmann::json& document);
// Throws std::runtime_error naming the file when it cannot be read or parsed.
WorkerConfig load_worker_config(const std::string& path);

// models_loaded[] entries of the capabilities body.
nlohmann::json models_loaded_json(const std::vector<ConfiguredModel>& models);

}  // namespace ojs::worker
