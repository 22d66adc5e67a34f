// The fields of a fetched OJS job that the worker acts on, read once.
// Accepts the spec's top-level ext_ml_* attributes and the SDKs' meta.* form.
#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace ojs::worker {

struct JobView {
  std::string id;
  std::string type;
  std::string queue;
  int attempt = 1;
  std::vector<int> assigned_devices;       // ext_ml_assigned_devices, set by the broker
  std::vector<std::string> visible_devices;  // CUDA_VISIBLE_DEVICES entries (MIG UUIDs); empty: the indices
  int mps_active_thread_percentage = 0;      // set on MPS-shared devices: CUDA_MPS_ACTIVE_THREAD_PERCENTAGE
  // Set on MPS-shared devices: the job's memory cap on each, MiB, by its position in
  // CUDA_VISIBLE_DEVICES (the ordinal the job's CUDA sees); 0 for a device not shared.
  std::vector<long long> mps_pinned_memory_mib;
  // Set by the agent when the worker advertises GPU devices: CUDA_VISIBLE_DEVICES is
  // then the agent's to set (kNoVisibleDevices without an assignment); otherwise the
  // operator's own value, inherited, stands.
  bool gpus_managed = false;
  std::optional<double> timeout_s;         // ext_ml_timeout_seconds, else timeout_ms, else timeout (s)
  std::string model_id;
  std::string model_checksum;              // "sha256:<hex>"
  std::string model_registry_uri;
  nlohmann::json last_checkpoint;          // null when the job starts fresh
  int preemption_grace_period_s = 30;
  // ext_ml_checkpoint_*: where the job keeps its checkpoints (its own prefix under
  // checkpoint_storage_uri: `<uri><job id>/`, "" when none), how often it is asked to
  // (0 when checkpoints are not enabled) and how many are kept.
  std::string checkpoint_uri;
  std::optional<double> memory_gb;  // ext_ml_memory_gb: the job's memory limit where jobs are isolated
  // Its node selector's nvidia.com/cuda-version: the CUDA libraries mounted for it where jobs are isolated.
  std::string cuda_version;
  // Set by the agent from its devices (for isolation): the /dev/nvidia<minor> of each
  // assigned GPU (a MIG device's GPU), whether any is a MIG device, their NUMA nodes.
  std::vector<int> gpu_minors;
  bool mig = false;
  std::vector<int> numa_nodes;
  int checkpoint_interval_s = 0;
  int checkpoint_max_count = 3;
  // set when the job is one member of an ext_ml_gang (the broker fills them in FETCH).
  struct Gang {
    int rank = 0;
    int world_size = 0;
    std::string master_addr;
    int master_port = 0;
    int generation = 1;  // ext_ml_gang_generation: changes with each resize of an elastic gang
  };
  std::optional<Gang> gang;
};

// Throws std::invalid_argument when the job has no id or type.
JobView read_job(const nlohmann::json& job);

// The gang fields (ext_ml_gang_rank, _world_size, _master_addr, _master_port,
// _generation) of a job or of a heartbeat reply's `gangs` entry; nullopt without a rank.
std::optional<JobView::Gang> read_gang(const nlohmann::json& fields);

}  // namespace ojs::worker
