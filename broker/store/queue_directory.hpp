// The queues: their directory (global slot), each one's requirement classes, pause
// flag, counts by state and GPU budget, and the deletion of an empty one.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "broker/store/job_store.hpp"
#include "broker/store/redis_client.hpp"

namespace ojs::broker {

class QueueDirectory {
 public:
  explicit QueueDirectory(RedisPool& redis) : redis_(redis) {}

  std::vector<std::string> queues();
  std::size_t queue_count();
  bool queue_exists(const std::string& queue);
  void register_queue(const std::string& queue);  // into the directory (no-op when known)
  // Deletes an empty queue (no job waiting, running, scheduled or dead-lettered)
  // and its keys; returns false (nothing deleted) when it is not empty.
  bool delete_queue_if_empty(const std::string& queue);

  ClassSet load_classes(const std::string& queue);
  std::string class_json(const std::string& queue, const std::string& class_id);  // one class's canonical JSON ("" : none)
  std::string classes_version(const std::string& queue);  // "0" before the first class

  // By state: available, active, scheduled, retryable, dead_letter, completed, discarded,
  // cancelled (preempted once counted; delayed = scheduled + retryable, kept for one release).
  // scheduled/retryable read the state of the first kDelayedSplitScan delayed jobs; past
  // that bound the rest count as scheduled.
  std::map<std::string, long long> queue_counts(const std::string& queue);
  static constexpr int kDelayedSplitScan = 10000;
  std::map<std::string, long long> ready_counts(const std::string& queue, const ClassSet& classes);  // per class

  bool set_paused(const std::string& queue, bool paused);
  bool is_paused(const std::string& queue);
  std::optional<std::int64_t> paused_at(const std::string& queue);  // ms; nullopt when not paused

  BudgetUse budget(const std::string& queue);

  // The queue's rate window (keys.hpp rate_window, written by the claim): the starts at
  // or after `since_ms`, and the oldest of them (ms), one round trip.
  struct RateWindow {
    long long starts = 0;
    std::optional<std::int64_t> oldest_ms;
  };
  RateWindow rate_window(const std::string& queue, std::int64_t since_ms);

 private:
  RedisPool& redis_;
};

}  // namespace ojs::broker
