// Queues as the API manages them (GET /ojs/v1/queues, queue stats, pause and
// resume, the admin's queue listing and deletion, the event endpoints' queue
// check): the directory of queues, each one's counts and pause flag, and the
// OJS errors an unknown or non-empty queue gets. PUSH creates queues
// (PushService, within --max-queues); so does a pause/resume naming one.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "broker/jobs/push_service.hpp"
#include "broker/store/queue_directory.hpp"

namespace ojs::broker {

struct QueueState {
  std::string name;
  bool paused = false;
  std::map<std::string, long long> counts;  // by state: available, active, scheduled, ... (QueueDirectory::queue_counts)
  std::optional<std::int64_t> paused_at;    // ms, while paused
};

class QueueService {
 public:
  // push: the --max-queues check and its known-queues cache.
  QueueService(QueueDirectory& store, PushService& push) : push_(push), store_(store) {}

  std::vector<std::string> names();  // every known queue
  bool exists(const std::string& queue);
  // 404 naming the queue when it is unknown.
  void require(const std::string& queue);
  bool paused(const std::string& queue);
  QueueState state(const std::string& queue);
  // The starts the queue's rate limit counted since `since_ms` (QueueDirectory::rate_window).
  QueueDirectory::RateWindow rate_window(const std::string& queue, std::int64_t since_ms) { return store_.rate_window(queue, since_ms); }
  // Pause or resume. The queue exists from now on, even before its first job
  // (pausing ahead of a rollout must work), within --max-queues (422). Returns when it
  // was paused (a second pause keeps the first time); nullopt after a resume.
  std::optional<std::int64_t> set_paused(const std::string& queue, bool paused);
  // Deletes an empty queue and its keys: 404 when unknown, 409 while it holds
  // jobs (waiting, active, scheduled or dead-lettered).
  void remove(const std::string& queue);

 private:
  PushService& push_;
  QueueDirectory& store_;
};

}  // namespace ojs::broker
