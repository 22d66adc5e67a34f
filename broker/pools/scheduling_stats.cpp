#include "broker/pools/scheduling_stats.hpp"

#include <cmath>

#include "broker/scheduling/queue_order.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker::pools {

using nlohmann::json;

json SchedulingStats::read() {
  const auto names = queues_.queues();
  const auto now = now_ms();
  PoolStore::QueueReadRequest what;
  what.minute = now / 60000;
  what.dispatched = true;
  what.active = true;
  const auto counts = store_.read_queues(names, what);
  std::vector<long long> last_minute(names.size());
  long long total = 0;
  for (std::size_t i = 0; i < names.size(); ++i) {
    last_minute[i] = std::llround(dispatches_last_minute(counts.dispatched_now[i], counts.dispatched_before[i], now % 60000));
    total += last_minute[i];
  }
  json queues = json::array();
  for (std::size_t i = 0; i < names.size(); ++i) {
    const double ratio = total > 0 ? static_cast<double>(last_minute[i]) / static_cast<double>(total) : 0.0;
    queues.push_back({{"name", names[i]}, {"dispatch_count_1m", last_minute[i]},
                      {"dispatch_ratio_1m", std::round(ratio * 1000) / 1000}, {"active_jobs", counts.active[i]}});
  }
  const json stats = {{"queues", queues}, {"window", "PT1M"}};
  json out = stats;
  out["stats"] = stats;
  return out;
}

}  // namespace ojs::broker::pools
