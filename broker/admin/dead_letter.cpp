#include "broker/admin/dead_letter.hpp"

#include "ojs/core/error.hpp"

namespace ojs::broker::admin {

namespace {

std::string queue_of(JobStore& store, const std::string& id) {
  auto queue = store.queue_of(id);
  if (!queue) throw OjsError(ErrorCode::not_found, "job " + id + " not found", {{"job_id", id}});
  return *queue;
}

Transition act(JobStore& store, const std::string& id, const std::string& action) {
  auto t = store.dead_letter_action(queue_of(store, id), id, action);
  if (t.status == TransitionStatus::not_found)
    throw OjsError(ErrorCode::not_found, "job " + id + " is not in the dead letter queue", {{"job_id", id}});
  return t;
}

}  // namespace

nlohmann::json dead_letter_page(JobService& jobs, const std::string& only, int offset, int limit) {
  JobStore& store = jobs.store();
  nlohmann::json page = nlohmann::json::array();
  long long total = 0;
  int skipped = 0;
  for (const auto& queue : only.empty() ? store.queues() : std::vector<std::string>{only}) {
    total += store.dead_letter_size(queue);
    for (const auto& record : store.dead_letter(queue, 0, offset + limit)) {
      if (skipped < offset) {
        ++skipped;
        continue;
      }
      if (static_cast<int>(page.size()) < limit) page.push_back(record.envelope());
    }
  }
  return {{"jobs", page}, {"pagination", {{"total", total}, {"limit", limit}, {"offset", offset}}}};
}

nlohmann::json retry_dead(JobService& jobs, const std::string& id) { return act(jobs.store(), id, "retry").job.envelope(); }

void discard_dead(JobService& jobs, const std::string& id) {
  act(jobs.store(), id, "discard");
  jobs.store().forget(id);
}

nlohmann::json retry_job(JobService& jobs, const std::string& id) {
  JobStore& store = jobs.store();
  const auto queue = queue_of(store, id);
  auto t = store.dead_letter_action(queue, id, "retry");
  if (t.status != TransitionStatus::ok) {
    auto record = store.get(queue, id);
    const std::string state = record ? record->state() : "unknown";
    throw OjsError(ErrorCode::conflict, "only dead-letter jobs can be retried; job " + id + " is " + state,
                   {{"job_id", id}, {"state", state}});
  }
  return t.job.envelope();
}

}  // namespace ojs::broker::admin
