// Filter plugin `preemption_pending` (code preemptible): the preemption controller
// marked lower-class jobs on a worker for this class's waiting head and holds the GPUs
// they free for it (a CapacityHold without a backfill start). While the victims run
// out their grace period the worker cannot take the job yet; FETCH and the diagnosis
// both say so, naming the victims and when the hold ends.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ojs/ml/predicates.hpp"

namespace ojs::broker {

ml::Refusal preemption_pending_refusal(const std::string& for_job, const std::vector<std::string>& victims,
                                       std::int64_t hold_until_ms);

}  // namespace ojs::broker
