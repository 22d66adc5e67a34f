#include "ojs/ml/worker_load.hpp"

#include <nlohmann/json.hpp>

#include "json_fields.hpp"
#include "ojs/ml/affinity.hpp"
#include "ojs/ml/requirements.hpp"

namespace ojs::ml {

void WorkerLoad::hold(const std::vector<int>& devices, std::optional<double> memory_gb) {
  for (const int d : devices) {
    busy_devices.insert(d);
    ++device_jobs[d];
    if (memory_gb) device_memory_gb[d] += *memory_gb;
    else ++device_undeclared[d];
  }
}

void WorkerLoad::drain(const std::vector<int>& devices) {
  drained_devices.insert(devices.begin(), devices.end());
  busy_devices.insert(devices.begin(), devices.end());
}

JobDemand job_demand(const nlohmann::json& job) {
  JobDemand out;
  try {
    const auto hard = parse_requirements(job).hard;
    out.gpu_memory_gb = hard.gpu.memory_gb;
    out.cpu_cores = hard.cpu_cores.value_or(0);
    out.memory_gb = hard.memory_gb.value_or(0);
    out.tpu_chips = hard.tpu.chip_count;
  } catch (const std::exception&) {  // accepted at PUSH; a document changed since weighs its fair share, no host use
  }
  return out;
}

std::optional<double> job_gpu_memory_gb(const nlohmann::json& job) { return job_demand(job).gpu_memory_gb; }

int WorkerLoad::gpus_in_use() const {
  int n = 0;
  for (const auto& j : active) n += j.gpus;
  return n;
}

int WorkerLoad::cpu_cores_in_use() const {
  int n = 0;
  for (const auto& j : active) n += j.cpu_cores;
  return n;
}

double WorkerLoad::memory_gb_in_use() const {
  double gb = 0;
  for (const auto& j : active) gb += j.memory_gb;
  return gb;
}

int WorkerLoad::tpu_chips_in_use() const {
  int n = 0;
  for (const auto& j : active) n += j.tpu_chips;
  return n;
}

namespace {
// A scalar as a label value: strings verbatim, numbers and booleans as JSON text.
std::optional<std::string> scalar_label(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number() || v.is_boolean()) return v.dump();
  return std::nullopt;
}
}  // namespace

Labels job_labels(const nlohmann::json& job) {
  Labels out;
  if (!job.is_object()) return out;
  auto put_string = [&](const char* key, const char* label) {
    if (auto it = job.find(key); it != job.end() && it->is_string()) out[label] = it->get<std::string>();
  };
  put_string("type", "type");
  put_string("type", "job_type");  // the key of the spec's anti-affinity example (ojs-ml-resources.md 7.3)
  put_string("queue", "queue");
  put_string("id", "job_id");
  std::map<std::string, const nlohmann::json*> attributes;
  try {
    attributes = ml_attributes(job);
  } catch (const std::exception&) {  // a malformed meta.* never passed PUSH; read what the top level has
  }
  for (const auto& [name, value] : attributes)
    if (auto label = scalar_label(*value)) out[name] = std::move(*label);
  const auto meta = job.find("meta");
  if (meta == job.end() || !meta->is_object()) return out;
  if (auto tenant = meta->find("tenant_id"); tenant != meta->end() && tenant->is_string())
    out.try_emplace("tenant_id", tenant->get<std::string>());
  const auto labels = meta->find("labels");
  if (labels == meta->end()) return out;
  if (labels->is_object()) {
    for (auto it = labels->begin(); it != labels->end(); ++it)
      if (auto label = scalar_label(it.value())) out.try_emplace(it.key(), std::move(*label));
  } else if (labels->is_array()) {
    for (const auto& entry : *labels)
      if (entry.is_string()) out.insert(split_label(entry.get<std::string>()));  // try_emplace: the first wins
  }
  return out;
}

std::vector<AffinityRule> job_anti_affinity(const nlohmann::json& job) {
  try {
    if (!job.is_object() || !ml_attributes(job).count("anti_affinity")) return {};  // most jobs: no full parse
    return parse_requirements(job).hard.anti_affinity;
  } catch (const std::exception&) {
    return {};
  }
}

ActiveJob active_job_from(const nlohmann::json& job, int gpus) {
  ActiveJob a;
  if (auto id = job.find("id"); id != job.end() && id->is_string()) a.job_id = id->get<std::string>();
  a.gpus = gpus;
  a.labels = job_labels(job);
  a.anti_affinity = job_anti_affinity(job);
  const auto demand = job_demand(job);
  a.gpu_memory_gb = demand.gpu_memory_gb;
  a.cpu_cores = demand.cpu_cores;
  a.memory_gb = demand.memory_gb;
  a.tpu_chips = demand.tpu_chips;
  return a;
}

std::optional<Exclusion> excluded_by_running(const WorkerLoad& load, const Labels& candidate, bool known_keys_only) {
  for (const auto& job : load.active)
    for (const auto& rule : job.anti_affinity) {
      if (known_keys_only && !candidate.count(rule.key)) continue;
      if (rule_matches(rule, candidate)) return Exclusion{job.job_id, rule};
    }
  return std::nullopt;
}

}  // namespace ojs::ml
