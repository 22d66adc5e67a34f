#include "broker/workers/worker_registry.hpp"

#include <algorithm>
#include <string_view>

#include "ojs/core/time.hpp"

namespace ojs::broker {

WorkerRegistry::Contact WorkerRegistry::contact(const std::string& worker_id, const std::string* capabilities,
                                                const std::vector<std::string>& queues, const std::string& incarnation,
                                                std::size_t reported_jobs) {
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
  const std::vector<std::string> known = known_queues(worker_id);
  auto contact = store_.contact(worker_id, write && capabilities ? &caps_json : nullptr,
                                write && !queues.empty() ? &queues_json : nullptr,
                                capabilities ? queues : std::vector<std::string>{}, known);  // only a worker with capabilities has claims listed
  // Only a terminate the worker's incarnation has not yet been told, or a drain, needs the script.
  if (contact.state == "drain" || (contact.state == "terminate" && !incarnation.empty() && contact.terminated_by != incarnation))
    contact.state = store_.deliver_directive(worker_id, incarnation, contact.held.load.active.empty() && reported_jobs == 0);
  std::lock_guard lock(profiles_mutex_);
  if (write) {  // remembered once Redis has it (a failed write is retried by the next contact)
    if (profiles_.size() >= kMaxProfiles && !profiles_.count(worker_id)) profiles_.clear();
    profiles_[worker_id] = {hash, now};
  }
  if (queue_lists_.size() >= kMaxProfiles && !queue_lists_.count(worker_id)) queue_lists_.clear();
  queue_lists_[worker_id] = contact.queues;
  return contact;
}

std::vector<std::string> WorkerRegistry::known_queues(const std::string& worker_id) {
  std::lock_guard lock(profiles_mutex_);
  auto it = queue_lists_.find(worker_id);
  return it == queue_lists_.end() ? std::vector<std::string>{} : it->second;
}

std::vector<std::string> WorkerRegistry::prune(std::int64_t older_than_ms, int limit) {
  std::vector<std::string> forgotten;
  for (const auto& id : store_.silent_since(older_than_ms, limit))
    if (forget(id, older_than_ms)) forgotten.push_back(id);
  return forgotten;
}

bool WorkerRegistry::forget(const std::string& worker_id, std::int64_t silent_since_ms) {
  if (!load(worker_id).active.empty()) return false;  // still holds a job: reclaim comes first (load() drops stale records)
  if (!store_.prune(worker_id, silent_since_ms)) return false;
  std::lock_guard lock(profiles_mutex_);
  queue_lists_.erase(worker_id);
  return true;
}

}  // namespace ojs::broker
