#include "broker/events/event_log.hpp"

#include <algorithm>

#include "ojs/core/time.hpp"

namespace ojs::broker {

bool EventFilter::matches(const nlohmann::json& event) const {
  const auto& data = event["data"];
  if (!types.empty() && !types.count(event.value("type", ""))) return false;
  if (!queues.empty() && !queues.count(data.value("queue", ""))) return false;
  if (!job_types.empty() && !job_types.count(data.value("job_type", ""))) return false;
  if (!job_id.empty() && event.value("subject", "") != job_id) return false;
  return true;
}

nlohmann::json to_event(const StreamEntry& entry) {
  nlohmann::json data = nlohmann::json::object();
  std::string type;
  for (const auto& [k, v] : entry.fields) {
    if (k == "type") type = v;
    else if (k == "attempt" || k == "duration_ms") data[k] = std::stoll(v.empty() ? "0" : v);
    else if (k == "next_attempt_at") data[k] = format_rfc3339(std::stoll(v));
    else data[k] = v;
  }
  if (!data.contains("queue")) data["queue"] = entry.queue;  // events not about one job (cron.skipped) still name theirs
  return {{"id", entry.id.text()}, {"type", type}, {"time", format_rfc3339(entry.id.ms)}, {"specversion", "1.0"},
          {"subject", data.value("job_id", "")}, {"data", data}};
}

std::vector<nlohmann::json> EventLog::newest(const std::vector<std::string>& queues, const EventFilter& filter,
                                             const JobVisibility& visible, int limit) {
  // Read enough from each stream to satisfy the filter, then merge newest first.
  auto entries = events_.newest(queues, std::max(limit * 10, 200));
  std::sort(entries.begin(), entries.end(), [](const StreamEntry& a, const StreamEntry& b) { return a.id > b.id; });
  std::vector<nlohmann::json> out;
  for (const auto& entry : entries) {
    if (static_cast<int>(out.size()) >= limit) break;
    auto event = to_event(entry);
    if (!filter.matches(event)) continue;
    if (visible && !visible(event.value("subject", ""))) continue;
    out.push_back(std::move(event));
  }
  return out;
}

}  // namespace ojs::broker
