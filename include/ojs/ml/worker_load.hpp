// What is running on a worker right now: the dynamic half of matching.
// The broker builds it from its own records of active jobs at each FETCH.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <map>
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
};

struct WorkerLoad {
  std::vector<ActiveJob> active;
  std::set<int> busy_devices;  // device indices held by active jobs
  std::map<int, int> device_jobs;  // device index -> active jobs on it (for devices shared through MPS)
  int gpus_in_use() const;
  // Records a job's devices: busy, and one more job on each.
  void hold(const std::vector<int>& devices);
};

// The labels a job exposes to anti-affinity: "type", "queue", "job_id", every scalar
// ext_ml_* attribute under its name without the prefix ("model_id", "gpu_type",
// "priority_class", ...), the SDK meta.model.id (or .name: meta_aliases.hpp) as
// "model_id" when no top-level one,
// and the string entries of meta.labels{} verbatim.
Labels job_labels(const nlohmann::json& job);

// ActiveJob for a job document that was just claimed.
ActiveJob active_job_from(const nlohmann::json& job, int gpus);

}  // namespace ojs::ml
