#include "broker/admin/usage.hpp"

#include <algorithm>
#include <map>

#include "broker/store/usage_resources.hpp"
#include "broker/store/usage_store.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker::admin {

using nlohmann::json;

namespace {
constexpr std::int64_t kHourMs = 3600000;

const std::string& key_of(const UsageHour& h, const std::string& by) {
  if (by == "queue") return h.queue;
  if (by == "type") return h.type;
  if (by == "worker") return h.worker;
  return h.tenant;
}
}  // namespace

bool is_usage_grouping(const std::string& by) { return by == "tenant" || by == "queue" || by == "type" || by == "worker"; }

json usage_report(UsageSources& s, const std::vector<std::string>& queues, const std::string& by, std::int64_t from_ms,
                  std::int64_t to_ms) {
  auto& store = s.usage;
  std::map<std::string, std::map<std::string, long long>> sums;  // key -> resource -> us
  for (const auto& h : store.hours(queues, from_ms / kHourMs, to_ms / kHourMs)) sums[key_of(h, by)][h.resource] += h.microseconds;
  json rows = json::array();
  for (const auto& [key, used] : sums) {
    json row = {{by, key}, {"microseconds", json::object()}};
    for (const auto& r : kUsageResources) {
      auto it = used.find(r.name);
      const long long us = it == used.end() ? 0 : it->second;
      row[std::string(r.reported) + "_seconds"] = static_cast<double>(us) / r.per_unit;
      row["microseconds"][r.name] = us;
    }
    rows.push_back(std::move(row));
  }
  // The end of the last hour read, at most the last instant RFC 3339 writes (a `to` in
  // 9999's last hour would end in year 10000).
  constexpr std::int64_t kLastRfc3339Ms = 253402300799999;  // 9999-12-31T23:59:59.999Z
  return {{"from", format_rfc3339(from_ms / kHourMs * kHourMs)},
          {"to", format_rfc3339(std::min((to_ms / kHourMs + 1) * kHourMs, kLastRfc3339Ms))},
          {"by", by},
          {"rows", rows}};
}

void settle_ends(UsageSources& s) { s.usage.settle(s.queues.queues()); }

void trim_usage(UsageSources& s, std::int64_t retention_hours) {
  auto& store = s.usage;
  const auto before = now_ms() / kHourMs - retention_hours;
  for (const auto& queue : s.queues.queues()) store.trim(queue, before);
}

}  // namespace ojs::broker::admin
