#include "ojs/ml/worker_load.hpp"

#include <nlohmann/json.hpp>

#include "ojs/ml/meta_aliases.hpp"

namespace ojs::ml {

void WorkerLoad::hold(const std::vector<int>& devices) {
  for (const int d : devices) {
    busy_devices.insert(d);
    ++device_jobs[d];
  }
}

int WorkerLoad::gpus_in_use() const {
  int n = 0;
  for (const auto& j : active) n += j.gpus;
  return n;
}

Labels job_labels(const nlohmann::json& job) {
  Labels out;
  if (!job.is_object()) return out;
  auto put_string = [&](const char* key, const char* label) {
    if (auto it = job.find(key); it != job.end() && it->is_string()) out[label] = it->get<std::string>();
  };
  put_string("type", "type");
  put_string("queue", "queue");
  put_string("id", "job_id");
  for (auto it = job.begin(); it != job.end(); ++it) {
    if (it.key().rfind("ext_ml_", 0) != 0) continue;
    const auto& v = it.value();
    std::string name = it.key().substr(7);
    if (v.is_string()) out[name] = v.get<std::string>();
    else if (v.is_number() || v.is_boolean()) out[name] = v.dump();
  }
  if (auto meta = job.find("meta"); meta != job.end() && meta->is_object()) {
    if (const auto* id = meta_value(job, "model_id"); id && id->is_string()) out.try_emplace("model_id", id->get<std::string>());
    if (auto labels = meta->find("labels"); labels != meta->end() && labels->is_object())
      for (auto it = labels->begin(); it != labels->end(); ++it)
        if (it.value().is_string()) out.try_emplace(it.key(), it.value().get<std::string>());
  }
  return out;
}

ActiveJob active_job_from(const nlohmann::json& job, int gpus) {
  ActiveJob a;
  if (auto id = job.find("id"); id != job.end() && id->is_string()) a.job_id = id->get<std::string>();
  a.gpus = gpus;
  a.labels = job_labels(job);
  return a;
}

}  // namespace ojs::ml
