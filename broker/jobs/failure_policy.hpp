// What a failure does to a job (ojs-retry.md): retry after backoff, discard, dead
// letter, or (requeue) go back without consuming the attempt. Pure decisions over
// the job's snapshot: NACK (JobService::fail) and the reaper apply them.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "broker/store/job_record.hpp"

namespace ojs::broker {

struct FailurePlan {
  std::string outcome;
  std::int64_t due_ms = 0;
  std::int64_t delay_ms = 0;  // retry: the backoff chosen (NACK replies carry it as retry_delay_ms)
  nlohmann::json error;
  nlohmann::json errors;
};

// Why an attempt ended. A handler failure (NACK, execution timeout) retries after
// backoff (ojs-retry.md); a lost reservation (visibility timeout, worker gone)
// returns the job to `available` at once (ojs-core.md §6, ojs-worker-protocol.md
// §5.5, §10.2). Both consume the attempt and respect max_attempts.
enum class FailureCause { handler, lost_reservation };

// `poison`: the job's own retry policy cannot be read; it goes to the dead letter.
FailurePlan plan_failure(const JobRecord& snapshot, const nlohmann::json& reported_error, bool requeue,
                         FailureCause cause = FailureCause::handler, bool poison = false);

// A retried NACK (its first reply lost: the broker answered 503) by the worker whose
// failure the job last recorded, with the same error, answers as the first did; it is
// read only, so nothing is written twice. Requeues record no error: they stay conflicts.
bool replays_its_last_failure(const JobRecord& job, const nlohmann::json& error, bool requeue, const std::string& worker_id);

}  // namespace ojs::broker
