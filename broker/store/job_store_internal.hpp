// What the job stores' .cpp files share (queue and job directory, transitions,
// claims): never included outside broker/store.
#pragma once
#include <cstddef>
#include <ctime>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "broker/store/job_store.hpp"
#include "broker/store/keys.hpp"

namespace ojs::broker::detail {

TransitionStatus status_of(const std::string& word);

// The directory entries a new job needs (global slot), written ahead of its queue's
// script; HSETNX: the first write wins (the queue's value is when it was first seen).
inline std::vector<std::string> job_directory_entry(const std::string& id, const std::string& queue) {
  return {"HSETNX", keys::job_directory, id, queue};
}
inline std::vector<std::string> queue_directory_entry(const std::string& queue) {
  return {"HSETNX", keys::queue_directory, queue, std::to_string(time(nullptr) * 1000LL)};
}

// A job transition's keys followed by those that advance its workflow,
// then the keys the script declares after them (`after`).
inline std::vector<std::string> with_workflow_keys(std::vector<std::string> script_keys, const std::string& queue,
                                                   std::vector<std::string> after = {}) {
  for (auto& k : keys::workflow_transition_keys(queue)) script_keys.push_back(std::move(k));
  for (auto& k : after) script_keys.push_back(std::move(k));
  return script_keys;
}

// `script_keys` followed by the keys that charge an ended attempt's use.
inline std::vector<std::string> with_usage_keys(std::vector<std::string> script_keys, const std::string& queue) {
  for (auto& k : keys::usage_transition_keys(queue)) script_keys.push_back(std::move(k));
  return script_keys;
}

// The ids a single script call extends or a single HMGET resolves: one call holds
// Redis's one thread, so a 100k-id heartbeat is cut into slices that other
// clients' commands interleave with.
constexpr std::size_t kSlice = 500;

// What this process learned from its own claims, to spare Redis reads (keyed by
// Redis endpoint, then job id; bounded, starting over past the bound): the queue of
// each job it handed out, and whether it is a workflow's job. A job never changes
// queue, so its ACK/NACK skips the directory read; the ACK of a job known to be a
// workflow's sends the workflow keys at once (ack.lua asks for them otherwise).
// ClaimStore remembers, JobStore forgets, JobDirectory looks up.
class ClaimedQueues {
 public:
  std::optional<std::string> claimed_queue(const std::string& job) {
    std::lock_guard lock(mutex_);
    auto it = claimed_.find(job);
    if (it == claimed_.end()) return std::nullopt;
    return it->second.queue;
  }
  // Whether a job this process claimed belongs to a workflow (false when not known).
  bool workflow_job(const std::string& job) {
    std::lock_guard lock(mutex_);
    auto it = claimed_.find(job);
    return it != claimed_.end() && it->second.workflow;
  }
  void remember_claimed(const std::string& job, const std::string& queue, bool workflow) {
    std::lock_guard lock(mutex_);
    if (claimed_.size() >= kMaxClaimed) claimed_.clear();
    claimed_[job] = {queue, workflow};
  }
  void forget_claimed(const std::string& job) {
    std::lock_guard lock(mutex_);
    claimed_.erase(job);
  }

 private:
  struct Claimed {
    std::string queue;
    bool workflow = false;
  };
  static constexpr std::size_t kMaxClaimed = 100000;
  std::mutex mutex_;
  std::unordered_map<std::string, Claimed> claimed_;
};

ClaimedQueues& hints();

}  // namespace ojs::broker::detail
