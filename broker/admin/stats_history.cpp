#include "broker/admin/stats_history.hpp"

#include <algorithm>

#include "broker/store/stats_history_store.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker::admin {

using nlohmann::json;

namespace {
constexpr std::int64_t kMinuteMs = 60000;
}

json throughput(HistorySources& s, const std::vector<std::string>& queues) {
  const auto now = now_ms() / kMinuteMs;
  long long processed = 0, failed = 0;
  for (const auto& m : s.history.range(queues, now - kThroughputMinutes + 1, now)) {
    processed += m.processed;
    failed += m.failed;
  }
  return {{"processed_per_minute", static_cast<double>(processed) / kThroughputMinutes},
          {"failed_per_minute", static_cast<double>(failed) / kThroughputMinutes}};
}

std::optional<int> period_minutes(const std::string& period) {
  if (period == "1m") return 1;
  if (period == "5m") return 5;
  if (period == "1h") return 60;
  if (period == "1d") return 1440;
  return std::nullopt;
}

json stats_history(HistorySources& s, const std::vector<std::string>& queues, const std::string& period, std::int64_t since_ms,
                   std::int64_t until_ms) {
  const int width = period_minutes(period).value_or(5);
  const auto now = now_ms() / kMinuteMs;
  const auto first = std::max(since_ms / kMinuteMs, now - StatsHistoryStore::kKeepMinutes + 1);
  const auto last = std::min(until_ms / kMinuteMs, now);
  json data = json::array();
  if (first <= last) {
    json* bucket = nullptr;
    std::int64_t bucket_start = -1;
    for (const auto& m : s.history.range(queues, first, last)) {
      const auto start = m.minute - m.minute % width;
      if (start != bucket_start) {
        data.push_back({{"timestamp", format_rfc3339(start * kMinuteMs)}, {"processed", 0}, {"failed", 0}});
        bucket = &data.back();
        bucket_start = start;
      }
      (*bucket)["processed"] = (*bucket)["processed"].get<long long>() + m.processed;
      (*bucket)["failed"] = (*bucket)["failed"].get<long long>() + m.failed;
    }
  }
  return {{"period", period}, {"data", data}};
}

void trim_stats_history(HistorySources& s) {
  auto& history = s.history;
  const auto before = now_ms() / kMinuteMs - StatsHistoryStore::kKeepMinutes;
  for (const auto& queue : s.queues.queues()) history.trim(queue, before);
}

}  // namespace ojs::broker::admin
