#include "broker/jobs/checkpoint_lag.hpp"

#include <algorithm>

#include "ojs/ml/requirements.hpp"

namespace ojs::broker {

std::optional<CheckpointLag> checkpoint_lag(const JobRecord& job, std::int64_t now_ms) {
  if (job.state() != "active") return std::nullopt;
  ml::CheckpointConfig config;
  try {
    config = ml::parse_requirements(job.envelope()).scheduling.checkpoint;
  } catch (const std::exception&) {
    return std::nullopt;  // stored as PUSH validated it; an unreadable one is not judged here
  }
  if (!config.enabled) return std::nullopt;
  CheckpointLag lag;
  lag.interval_s = config.interval_s;
  lag.since_ms = std::max(job.get_int("started_at").value_or(now_ms), job.get_int("last_checkpoint_at").value_or(0));
  const std::int64_t allowed_ms = 2LL * config.interval_s * 1000;
  if (now_ms - lag.since_ms > allowed_ms) {
    lag.overdue = true;
    lag.overdue_by_ms = now_ms - lag.since_ms - allowed_ms;
  }
  return lag;
}

}  // namespace ojs::broker
