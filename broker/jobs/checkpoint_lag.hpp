// Whether a running job still checkpoints as it said it would: a job with
// ext_ml_checkpoint_enabled that has committed no checkpoint for more than twice its
// interval (since its last one, or since this attempt started: one save missed, room
// left for a slow one) is overdue. Its diagnosis says so and /metrics counts them per
// queue: a job that stopped checkpointing loses its work when it is preempted.
#pragma once
#include <cstdint>
#include <optional>

#include "broker/store/job_record.hpp"

namespace ojs::broker {

struct CheckpointLag {
  int interval_s = 0;
  std::int64_t since_ms = 0;       // its last checkpoint, or this attempt's start
  bool overdue = false;
  std::int64_t overdue_by_ms = 0;  // past twice the interval (0 unless overdue)
};

// nullopt: the job is not running, or does not checkpoint.
std::optional<CheckpointLag> checkpoint_lag(const JobRecord& job, std::int64_t now_ms);

}  // namespace ojs::broker
