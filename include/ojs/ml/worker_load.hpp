// What is running on a worker right now: the dynamic half of matching.
// The broker builds it from its own records of active jobs at each FETCH.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ojs/ml/types.hpp"

namespace ojs::ml {

struct ActiveJob {
  std::string job_id;
  int gpus = 0;  // GPUs the job holds (its gpu_count)
  // Labels that anti-affinity rules of other jobs are evaluated against; see job_labels().
  Labels labels;
  // The job's own required anti-affinity: it refuses candidates these match (symmetric).
  std::vector<AffinityRule> anti_affinity;
  // GPU memory per device the job declared (ext_ml_gpu_memory_gb); none: it takes a
  // shared device's fair share (see memory_charge_gb in device_assignment.hpp).
  std::optional<double> gpu_memory_gb;
  // Host resources the job declared (its hard requirements; 0 when it declared none):
  // held on the worker while it runs, like its GPUs.
  int cpu_cores = 0;
  double memory_gb = 0;
  int tpu_chips = 0;
};

struct WorkerLoad {
  std::vector<ActiveJob> active;
  std::set<int> busy_devices;  // device indices held by active jobs
  std::map<int, int> device_jobs;  // device index -> active jobs on it (for devices shared through MPS)
  // What the active jobs on a device declared of its memory, and how many declared none.
  std::map<int, double> device_memory_gb;
  std::map<int, int> device_undeclared;
  std::set<int> drained_devices;  // an admin drained them (per-GPU drain): never available, shared or not
  int gpus_in_use() const;
  int cpu_cores_in_use() const;    // declared by the active jobs
  double memory_gb_in_use() const;
  int tpu_chips_in_use() const;
  // Records a job's devices: busy, one more job on each, and the memory it declared there.
  void hold(const std::vector<int>& devices, std::optional<double> memory_gb = std::nullopt);
  // Per-GPU drain: the devices take no job (and count busy for scoring and backfill).
  void drain(const std::vector<int>& devices);
};

// The labels a job exposes to anti-affinity: "type" (also as "job_type", the spec
// example's key), "queue", "job_id", every scalar ML attribute under its name
// without the prefix ("model_id", "gpu_type", "runtime", "priority_class", ...) in
// either encoding (top-level ext_ml_*, or the SDK meta.* spellings such as
// meta.compute.runtime: ml_attributes), meta.tenant_id as "tenant_id", and
// meta.labels, an object (scalar entries verbatim) or a worker-info style array
// of "k=v" entries and bare flags.
Labels job_labels(const nlohmann::json& job);

// The job's required anti-affinity rules in either encoding (none when it has none
// or they do not parse: PUSH validated them).
std::vector<AffinityRule> job_anti_affinity(const nlohmann::json& job);
// What a job document declares it holds on a worker while it runs (its hard
// requirements), read in one parse: the GPU memory per device (none: no declaration,
// or a document that does not parse), CPU cores, host memory and TPU chips (0: none).
struct JobDemand {
  std::optional<double> gpu_memory_gb;
  int cpu_cores = 0;
  double memory_gb = 0;
  int tpu_chips = 0;
};
JobDemand job_demand(const nlohmann::json& job);
std::optional<double> job_gpu_memory_gb(const nlohmann::json& job);  // job_demand(job).gpu_memory_gb

// ActiveJob for a job document that was just claimed.
ActiveJob active_job_from(const nlohmann::json& job, int gpus);

// Symmetric anti-affinity: the first running job whose own anti-affinity matches a
// candidate with these labels. known_keys_only: judge only rules whose key the
// labels carry (a requirement class knows its jobs' ML attributes, not their type,
// id or meta.labels; rules on those are judged on the claimed job).
struct Exclusion {
  std::string job_id;
  AffinityRule rule;
};
std::optional<Exclusion> excluded_by_running(const WorkerLoad& load, const Labels& candidate, bool known_keys_only);

}  // namespace ojs::ml
