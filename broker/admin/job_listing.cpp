#include "broker/admin/job_listing.hpp"

#include <algorithm>

#include "broker/store/job_index_store.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker::admin {

using nlohmann::json;

namespace {

json summary(const JobRecord& r) {
  json j = {{"id", r.id()}, {"type", r.get("type")}, {"state", r.state()}, {"attempt", r.attempt()},
            {"priority", r.get_int("priority").value_or(0)}, {"gpus", r.get_int("gpus").value_or(0)}};
  for (const char* f : {"tenant", "worker_id"})
    if (!r.get(f).empty()) j[f] = r.get(f);
  for (const char* f : {"enqueued_at", "started_at", "next_attempt_at", "scheduled_at"})
    if (auto ms = r.get_int(f)) j[f] = format_rfc3339(*ms);
  return j;
}

}  // namespace

bool is_listable_state(const std::string& state) {
  return std::any_of(std::begin(kListableStates), std::end(kListableStates), [&](const char* s) { return state == s; });
}

json list_jobs(JobService& service, const std::string& queue, const std::string& state, int limit) {
  JobStore& store = service.store();
  JobIndexStore index = store.index();
  std::vector<std::string> ids;
  if (state == "available") ids = index.available(queue, store.load_classes(queue), limit);
  else if (state == "active") ids = index.active(queue, limit);
  else if (state == "dead") ids = index.dead(queue, limit);
  else ids = index.delayed(queue, 4 * limit);  // scheduled and retryable share it: filtered by state below
  json jobs = json::array();
  std::vector<std::pair<std::string, std::string>> wanted;
  for (const auto& id : ids) wanted.emplace_back(queue, id);
  for (const auto& record : store.get_many(wanted)) {
    if (!record || static_cast<int>(jobs.size()) >= limit) continue;
    if (state != "dead" && record->state() != state) continue;
    jobs.push_back(summary(*record));
  }
  return {{"queue", queue}, {"state", state}, {"jobs", jobs}, {"count", jobs.size()}};
}

}  // namespace ojs::broker::admin
