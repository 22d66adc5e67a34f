// The order in which a pool's FETCH tries its queues (ojs-fair-scheduling.md §7):
// a pure function over what was read (docs/matching.md#worker-pools).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ojs::broker {

enum class PoolStrategy { strict, round_robin, weighted, least_loaded };

std::optional<PoolStrategy> parse_pool_strategy(std::string_view name);
std::string_view to_string(PoolStrategy strategy);

// One queue of the pool as the FETCH sees it, in the pool's listed order.
struct QueueTurn {
  std::string queue;
  double weight = 1;              // the pool's weight for it (weighted)
  double recent_dispatches = 0;   // jobs started from it in the last minute (weighted)
  long long backlog = 0;          // jobs waiting to start (least-loaded)
};

// strict: as listed. round-robin: listed, rotated to start at `turn` mod n.
// weighted: the fair-share rule the `fair` policy applies to tenants (FairShares::share:
// fraction of the recent use over weight), lowest first, ties as listed. least-loaded:
// deepest backlog first, ties as listed.
std::vector<std::string> order_pool_queues(PoolStrategy strategy, const std::vector<QueueTurn>& queues, std::uint64_t turn);

// Starts in the last minute from the per-minute rollup's two newest buckets: the
// current minute's count and the previous one's, weighted by the part of the previous
// minute still inside the window (a sliding window over fixed buckets).
double dispatches_last_minute(long long current_minute, long long previous_minute, std::int64_t ms_into_minute);

}  // namespace ojs::broker
