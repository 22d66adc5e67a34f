#include "broker/workers/worker_registry.hpp"

namespace ojs::broker {

std::vector<std::string> WorkerRegistry::prune(std::int64_t older_than_ms, int limit) {
  std::vector<std::string> forgotten;
  for (const auto& id : store_.silent_since(older_than_ms, limit))
    if (forget(id, older_than_ms)) forgotten.push_back(id);
  return forgotten;
}

bool WorkerRegistry::forget(const std::string& worker_id, std::int64_t silent_since_ms) {
  if (!load(worker_id).active.empty()) return false;  // still holds a job: reclaim comes first (load() drops stale records)
  return store_.prune(worker_id, silent_since_ms);
}

void WorkerRegistry::record_claim(const std::string& worker_id, const std::string& job_id, const std::string& queue,
                                  const ml::ActiveJob& job, const std::vector<int>& devices) {
  store_.record_claim(worker_id, job_id, {{"queue", queue}, {"gpus", job.gpus}, {"devices", devices}, {"labels", job.labels}});
}

}  // namespace ojs::broker
