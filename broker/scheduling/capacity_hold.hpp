// A capacity hold: a worker's GPUs kept for one waiting job, GPUs freed by
// preemption for the preemptor, or a backfill reservation (backfill_start_ms > 0:
// the declared time its GPUs are all free; preemption/backfill.hpp). The
// controller writes them; FETCH's `capacity_hold` and `backfill` guards read them.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "broker/scheduling/running_job.hpp"
#include "broker/store/job_reads.hpp"

namespace ojs::broker {

struct CapacityHold {
  std::string worker_id, for_job, queue, class_id;
  int class_rank = 0;
  std::vector<RunningJob> victims;  // id, gpus, devices
  std::int64_t until_ms = 0;
  std::int64_t backfill_start_ms = 0;  // 0: a preemption hold
  int gpus = 0;  // GPUs the job needs: a preemption hold keeps the free GPUs it counted on too; the job's
  nlohmann::json to_json() const;
  static std::optional<CapacityHold> parse(const std::string& worker_id, const std::string& text);
};

// Whether the job a hold keeps capacity for still waits (available): once it is claimed,
// cancelled or gone the FETCH guard ignores the hold and the controller's passes drop it.
bool hold_still_wanted(JobReads& jobs, const CapacityHold& hold);

}  // namespace ojs::broker
