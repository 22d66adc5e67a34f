#include "broker/events/event_log.hpp"

#include <algorithm>

#include "broker/store/keys.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker {

namespace {

nlohmann::json to_event(const std::string& stream_id, const RedisValue& fields) {
  nlohmann::json data = nlohmann::json::object();
  std::string type;
  for (std::size_t i = 0; i + 1 < fields.elements.size(); i += 2) {
    const auto& k = fields.elements[i].str;
    const auto& v = fields.elements[i + 1].str;
    if (k == "type") type = v;
    else if (k == "attempt" || k == "duration_ms") data[k] = std::stoll(v.empty() ? "0" : v);
    else if (k == "next_attempt_at") data[k] = format_rfc3339(std::stoll(v));
    else data[k] = v;
  }
  const auto ms = std::stoll(stream_id.substr(0, stream_id.find('-')));
  return {{"id", stream_id}, {"type", type}, {"time", format_rfc3339(ms)}, {"specversion", "1.0"},
          {"subject", data.value("job_id", "")}, {"data", data}};
}

}  // namespace

std::vector<nlohmann::json> list_events(JobStore& store, const EventQuery& query) {
  const auto queues = query.queues.empty() ? store.queues() : query.queues;
  // Read enough from each stream to satisfy the filter, then merge newest first.
  const int scan = std::max(query.limit * 10, 200);
  std::vector<std::vector<std::string>> cmds;
  for (const auto& q : queues) cmds.push_back({"XREVRANGE", keys::events(q), "+", "-", "COUNT", std::to_string(scan)});
  std::vector<std::pair<std::string, nlohmann::json>> events;
  if (!cmds.empty()) {
    for (const auto& reply : store.redis().pipeline(cmds)) {
      for (const auto& entry : reply.elements) {
        if (entry.elements.size() != 2) continue;
        auto ev = to_event(entry.elements[0].str, entry.elements[1]);
        if (!query.types.empty() && !query.types.count(ev["type"].get<std::string>())) continue;
        if (!query.job_id.empty() && ev["subject"] != query.job_id) continue;
        events.emplace_back(entry.elements[0].str, std::move(ev));
      }
    }
  }
  auto newer = [](const auto& a, const auto& b) {
    const auto ams = std::stoll(a.first.substr(0, a.first.find('-')));
    const auto bms = std::stoll(b.first.substr(0, b.first.find('-')));
    if (ams != bms) return ams > bms;
    return a.first > b.first;
  };
  std::sort(events.begin(), events.end(), newer);
  std::vector<nlohmann::json> out;
  for (auto& [_, ev] : events) {
    if (static_cast<int>(out.size()) >= query.limit) break;
    out.push_back(std::move(ev));
  }
  return out;
}

}  // namespace ojs::broker
