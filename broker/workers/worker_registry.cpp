#include "broker/workers/worker_registry.hpp"

#include <algorithm>
#include <set>
#include <string_view>

#include <spdlog/spdlog.h>

#include "ojs/core/time.hpp"
#include "ojs/ml/capabilities.hpp"

namespace ojs::broker {

WorkerRegistry::Contact WorkerRegistry::contact(const std::string& worker_id, const std::string* capabilities,
                                                const std::vector<std::string>& queues, const std::string& incarnation,
                                                std::optional<std::size_t> reported_jobs,
                                                std::vector<std::vector<std::string>> riders) {
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
                                capabilities ? queues : std::vector<std::string>{}, known,  // only a worker with capabilities has claims listed
                                std::move(riders));
  // Only a terminate the worker's incarnation has not yet been told, or a drain, needs the script.
  if (contact.state == "drain" || (contact.state == "terminate" && !incarnation.empty() && contact.terminated_by != incarnation))
    contact.state = store_.deliver_directive(worker_id, incarnation,
                                             contact.held.load.active.empty() && (reported_jobs ? *reported_jobs == 0 : capabilities != nullptr));
  // Cordon: checked when the capabilities are written (they changed, or 30 s passed),
  // so an admin's resume holds until the worker reports its devices again.
  if (write && capabilities && contact.state == "running" && calls_for_cordon(caps_json)) {
    spdlog::warn("worker {}: {}% or more of its devices unhealthy: cordoned (quiet) until an admin resumes it", worker_id,
                 static_cast<int>(cordon_share_ * 100));
    store_.set_state(worker_id, "quiet");
    contact.state = "quiet";
  }
  std::lock_guard lock(profiles_mutex_);
  if (write) {  // remembered once Redis has it (a failed write is retried by the next contact)
    if (profiles_.size() >= kMaxProfiles && !profiles_.count(worker_id)) profiles_.clear();
    profiles_[worker_id] = {hash, now};
  }
  if (queue_lists_.size() >= kMaxProfiles && !queue_lists_.count(worker_id)) queue_lists_.clear();
  queue_lists_[worker_id] = contact.queues;
  return contact;
}

void WorkerRegistry::note_hostname(const std::string& worker_id, const std::string& hostname) {
  {
    std::lock_guard lock(profiles_mutex_);
    auto it = hostnames_.find(worker_id);
    if (it != hostnames_.end() && it->second == hostname) return;
  }
  store_.set_hostname(worker_id, hostname);
  std::lock_guard lock(profiles_mutex_);
  if (hostnames_.size() >= kMaxProfiles && !hostnames_.count(worker_id)) hostnames_.clear();
  hostnames_[worker_id] = hostname;
}

bool WorkerRegistry::calls_for_cordon(const std::string& capabilities_json) const {
  if (cordon_share_ <= 0) return false;
  const auto doc = nlohmann::json::parse(capabilities_json, nullptr, false);
  if (!doc.is_object()) return false;
  try {
    const auto devices = ml::parse_capabilities(doc).devices;
    if (devices.empty()) return false;
    // A device too hot for new jobs (the agent marks it `hot`) comes back as it cools:
    // no reason to cordon the worker.
    std::set<int> hot;
    for (const auto& d : doc.value("devices", nlohmann::json::array()))
      if (d.is_object() && d.value("hot", false) && d.contains("index") && d["index"].is_number_integer()) hot.insert(d["index"].get<int>());
    const auto unhealthy =
        std::count_if(devices.begin(), devices.end(), [&](const ml::GpuDevice& d) { return !d.healthy && !hot.count(d.index); });
    return unhealthy > 0 && static_cast<double>(unhealthy) >= cordon_share_ * static_cast<double>(devices.size()) - 1e-9;
  } catch (const std::exception&) {  // FETCH answers bad capabilities with 400; a heartbeat's are not judged
    return false;
  }
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
  hostnames_.erase(worker_id);
  return true;
}

}  // namespace ojs::broker
