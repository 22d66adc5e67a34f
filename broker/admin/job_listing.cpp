#include "broker/admin/job_listing.hpp"

#include <algorithm>

#include "broker/store/keys.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker::admin {

using nlohmann::json;

namespace {

// Ids of the available jobs in FETCH order across the queue's classes (lowest rank first).
std::vector<std::string> available_ids(JobStore& store, const std::string& queue, int limit) {
  const auto classes = store.load_classes(queue);
  std::vector<std::vector<std::string>> cmds;
  for (const auto& [id, _] : classes.classes)
    cmds.push_back({"ZRANGE", keys::ready(queue, id), "0", std::to_string(limit - 1), "WITHSCORES"});
  if (cmds.empty()) return {};
  std::vector<std::pair<double, std::string>> ranked;
  for (const auto& reply : store.redis().pipeline(cmds))
    for (std::size_t i = 0; i + 1 < reply.elements.size(); i += 2)
      ranked.emplace_back(std::stod(reply.elements[i + 1].str), reply.elements[i].str);
  std::sort(ranked.begin(), ranked.end());
  std::vector<std::string> ids;
  for (std::size_t i = 0; i < ranked.size() && static_cast<int>(i) < limit; ++i) ids.push_back(ranked[i].second);
  return ids;
}

std::vector<std::string> range(JobStore& store, const std::vector<std::string>& cmd) {
  std::vector<std::string> ids;
  for (const auto& e : store.redis().command(cmd).elements) ids.push_back(e.str);
  return ids;
}

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

json list_jobs(JobStore& store, const std::string& queue, const std::string& state, int limit) {
  std::vector<std::string> ids;
  const std::string last = std::to_string(limit - 1);
  if (state == "available") ids = available_ids(store, queue, limit);
  else if (state == "active") ids = range(store, {"ZRANGE", keys::active(queue), "0", last});
  else if (state == "dead") ids = range(store, {"ZREVRANGE", keys::dead(queue), "0", last});
  else ids = range(store, {"ZRANGE", keys::delayed(queue), "0", std::to_string(4 * limit - 1)});  // filtered by state below
  json jobs = json::array();
  if (!ids.empty()) {
    std::vector<std::vector<std::string>> cmds;
    for (const auto& id : ids) cmds.push_back({"HGETALL", keys::job(queue, id)});
    for (const auto& reply : store.redis().pipeline(cmds)) {
      if (reply.elements.empty() || static_cast<int>(jobs.size()) >= limit) continue;
      const auto record = JobRecord::from_flat_array(reply);
      if (state != "dead" && record.state() != state) continue;
      jobs.push_back(summary(record));
    }
  }
  return {{"queue", queue}, {"state", state}, {"jobs", jobs}, {"count", jobs.size()}};
}

}  // namespace ojs::broker::admin
