// The diagnosis end of the pipeline: the judgements FETCH recorded for a class (its
// filters' verdicts, by worker) re-read through the filters whose facts change
// without a FETCH: the worker's liveness (worker_quiet, worker_lost), a pending
// preemption for the job (preemption_pending) and the per-job locality hold
// (locality_hold applies to a job younger than the delay). The fold is ml::diagnose:
// the fleet's verdict code and the refusals by plugin. The job and queue diagnosis,
// INFO of a waiting job and `ojsctl why` all read it.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "broker/scheduling/diagnosis_log.hpp"
#include "broker/store/job_record.hpp"
#include "broker/store/preemption_store.hpp"
#include "broker/workers/worker_registry.hpp"

namespace ojs::broker {

class DiagnosisReview {
 public:
  DiagnosisReview(DiagnosisLog& log, WorkerRegistry& workers, PreemptionStore marks, std::int64_t dead_after_ms)
      : log_(log), workers_(workers), marks_(marks), dead_after_ms_(dead_after_ms) {}

  // For a class of a queue; `job`: the waiting job asked about (its id finds a
  // preemption pending for it, its enqueue time decides the locality hold).
  // Adds `preemption` {worker_id, for_job, victims, hold_until} while one is pending.
  // leave_out: workers whose verdicts are not about it (a running gang's own members).
  nlohmann::json summary(const std::string& queue, const std::string& class_id, const JobRecord* job = nullptr,
                         const std::vector<std::string>& leave_out = {});

 private:
  DiagnosisLog& log_;
  WorkerRegistry& workers_;
  PreemptionStore marks_;
  std::int64_t dead_after_ms_;
};

}  // namespace ojs::broker
