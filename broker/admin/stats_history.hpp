// Throughput and the stats history (ojs-admin-api.md §10.1, §10.2), from the
// per-minute rollup the scripts keep (store/stats_history_store.hpp): a day of
// 1-minute data, summed into the asked period. `enqueued` and latencies are not
// recorded (docs/spec-status.md).
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "broker/admin/sources.hpp"

namespace ojs::broker::admin {

// {processed_per_minute, failed_per_minute}: the mean over the last kThroughputMinutes minutes.
nlohmann::json throughput(HistorySources& s, const std::vector<std::string>& queues);
inline constexpr int kThroughputMinutes = 5;

// period: "1m" | "5m" | "1h" | "1d" -> minutes; nullopt otherwise.
std::optional<int> period_minutes(const std::string& period);
// {period, data[{timestamp, processed, failed}]}: buckets of the period aligned to the
// epoch, from since to until (ms), within the day kept.
nlohmann::json stats_history(HistorySources& s, const std::vector<std::string>& queues, const std::string& period,
                             std::int64_t since_ms, std::int64_t until_ms);

// Drops the rollup older than the day kept, for every queue (the maintenance pass).
void trim_stats_history(HistorySources& s);

}  // namespace ojs::broker::admin
