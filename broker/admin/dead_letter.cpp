#include "broker/admin/dead_letter.hpp"

#include "broker/store/job_index_store.hpp"
#include "ojs/core/error.hpp"

namespace ojs::broker::admin {

namespace {

std::string queue_of(DeadLetterSources& store, const std::string& id) {
  auto queue = store.directory.queue_of(id);
  if (!queue) throw OjsError(ErrorCode::not_found, "job " + id + " not found", {{"job_id", id}});
  return *queue;
}

Transition act(DeadLetterSources& store, const std::string& id, const std::string& action) {
  auto t = store.dead.act(queue_of(store, id), id, action);
  if (t.status == TransitionStatus::not_found)
    throw OjsError(ErrorCode::not_found, "job " + id + " is not in the dead letter queue", {{"job_id", id}});
  return t;
}

}  // namespace

nlohmann::json dead_letter_page(DeadLetterSources& store, const std::string& only, int offset, int limit) {
  nlohmann::json page = nlohmann::json::array();
  long long total = 0;
  int skipped = 0;
  for (const auto& queue : only.empty() ? store.queues.queues() : std::vector<std::string>{only}) {
    total += store.dead.size(queue);
    for (const auto& record : store.dead.list(queue, 0, offset + limit)) {
      if (skipped < offset) {
        ++skipped;
        continue;
      }
      if (static_cast<int>(page.size()) < limit) page.push_back(record.envelope());
    }
  }
  return {{"jobs", page}, {"pagination", {{"total", total}, {"limit", limit}, {"offset", offset}}}};
}

nlohmann::json retry_dead(DeadLetterSources& store, const std::string& id) { return act(store, id, "retry").job.envelope(); }

void discard_dead(DeadLetterSources& store, const std::string& id) {
  act(store, id, "discard");
  store.directory.forget(id);
}

nlohmann::json retry_job(DeadLetterSources& store, const std::string& id) {
  auto t = store.dead.act(queue_of(store, id), id, "retry_finished");
  if (t.status == TransitionStatus::not_found) throw OjsError(ErrorCode::not_found, "job " + id + " not found", {{"job_id", id}});
  if (t.status != TransitionStatus::ok)
    throw OjsError(ErrorCode::conflict, "only discarded or cancelled jobs can be retried; job " + id + " is " + t.detail,
                   {{"job_id", id}, {"state", t.detail}});
  return t.job.envelope();
}

nlohmann::json dead_letter_stats(DeadLetterSources& store) {
  nlohmann::json by_queue = nlohmann::json::object();
  long long total = 0;
  for (const auto& queue : store.queues.queues()) {
    const auto n = store.dead.size(queue);
    if (n == 0) continue;
    by_queue[queue] = n;
    total += n;
  }
  return {{"total", total}, {"by_queue", by_queue}};
}

nlohmann::json retry_all_dead(DeadLetterSources& store, const std::string& only, int limit) {
  long long retried = 0;
  for (const auto& queue : only.empty() ? store.queues.queues() : std::vector<std::string>{only}) {
    if (retried >= limit) break;
    for (const auto& record : store.dead.list(queue, 0, static_cast<int>(limit - retried))) {
      // One at a time: a job retried meanwhile (not_found) is simply not counted.
      if (store.dead.act(queue, record.id(), "retry").status == TransitionStatus::ok) ++retried;
    }
  }
  return {{"retried", retried}};
}

long long purge_finished(DeadLetterSources& store, const std::string& queue, const std::vector<std::string>& states, std::int64_t before_ms) {
  JobIndexStore& index = store.index;
  constexpr int kSlice = 1000;  // jobs deleted per script call: one call holds Redis's one thread
  long long purged = 0;
  for (const auto& state : states)
    for (;;) {
      const auto ids = index.purge_finished(queue, state, before_ms, kSlice);
      for (const auto& id : ids) store.directory.forget(id);
      purged += static_cast<long long>(ids.size());
      if (ids.size() < static_cast<std::size_t>(kSlice)) break;
    }
  return purged;
}

}  // namespace ojs::broker::admin
