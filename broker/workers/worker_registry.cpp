#include "broker/workers/worker_registry.hpp"

#include <string_view>

#include "ojs/core/time.hpp"

namespace ojs::broker {

WorkerRegistry::Contact WorkerRegistry::contact(const std::string& worker_id, const std::string* capabilities,
                                                const std::vector<std::string>& queues) {
  static const std::string none;
  const std::string& caps_json = capabilities ? *capabilities : none;
  std::string queues_json;
  if (!queues.empty()) queues_json = nlohmann::json(queues).dump();
  bool write = capabilities || !queues.empty();
  const std::hash<std::string_view> text_hash;
  const std::size_t hash = text_hash(caps_json) * 31 + text_hash(queues_json);
  const auto now = now_ms();
  if (write) {
    std::lock_guard lock(profiles_mutex_);
    auto it = profiles_.find(worker_id);
    write = it == profiles_.end() || it->second.hash != hash || now - it->second.at_ms >= kResendProfileMs;
  }
  auto contact = store_.contact(worker_id, write && capabilities ? &caps_json : nullptr,
                                write && !queues.empty() ? &queues_json : nullptr);
  if (write) {  // remembered once Redis has it (a failed write is retried by the next contact)
    std::lock_guard lock(profiles_mutex_);
    if (profiles_.size() >= kMaxProfiles && !profiles_.count(worker_id)) profiles_.clear();
    profiles_[worker_id] = {hash, now};
  }
  return contact;
}

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
