#include "broker/jobs/queue_service.hpp"

#include "ojs/core/error.hpp"

namespace ojs::broker {

std::vector<std::string> QueueService::names() { return store_.queues(); }

bool QueueService::exists(const std::string& queue) { return store_.queue_exists(queue); }

void QueueService::require(const std::string& queue) {
  if (!exists(queue)) throw OjsError(ErrorCode::not_found, "queue " + queue + " not found", {{"queue", queue}});
}

bool QueueService::paused(const std::string& queue) { return store_.is_paused(queue); }

QueueState QueueService::state(const std::string& queue) {
  const auto since = store_.paused_at(queue);
  return {queue, since.has_value(), store_.queue_counts(queue), since};
}

std::optional<std::int64_t> QueueService::set_paused(const std::string& queue, bool paused) {
  push_.admit_queue(queue);
  store_.register_queue(queue);
  store_.set_paused(queue, paused);
  return paused ? store_.paused_at(queue) : std::nullopt;
}

void QueueService::remove(const std::string& queue) {
  require(queue);
  if (!store_.delete_queue_if_empty(queue))
    throw OjsError(ErrorCode::conflict, "queue " + queue + " still holds jobs (waiting, active, scheduled or dead-lettered)",
                   {{"queue", queue}, {"rule", "only an empty queue can be deleted"}});
  push_.forget_queue(queue);  // a PUSH to it counts against --max-queues again
}

}  // namespace ojs::broker
