// GET /ojs/v1/admin/scheduling/stats (ojs-fair-scheduling.md §10.2): each queue's
// starts in the last minute (the per-minute rollup's m<minute>:dispatched, as a
// sliding window over its two newest buckets), its share of all of them and its
// running jobs.
#pragma once
#include <nlohmann/json.hpp>

#include "broker/store/pool_store.hpp"
#include "broker/store/queue_directory.hpp"

namespace ojs::broker::pools {

class SchedulingStats {
 public:
  SchedulingStats(PoolStore& store, QueueDirectory& queues) : store_(store), queues_(queues) {}

  // {queues: [{name, dispatch_count_1m, dispatch_ratio_1m, active_jobs}], window: "PT1M"},
  // and the same under `stats` (the public suite reads $.stats).
  nlohmann::json read();

 private:
  PoolStore& store_;
  QueueDirectory& queues_;
};

}  // namespace ojs::broker::pools
