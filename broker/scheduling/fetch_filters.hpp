// The scheduling pipeline as FETCH runs it, in the manner of the Kubernetes scheduler
// framework: one worker's snapshot (WorkerView: capabilities, what it holds, its
// guard marks, read in its one contact round trip) through the filter plugins, in
// order, then the score plugins; the eligible classes go to the claim script, whose
// compare-and-set answers (budget, quota, rate limit, backfill window) come back as
// refusals of their own plugins (claim_refusals.hpp). Every refusal carries a verdict
// code (ojs/ml/verdict.hpp); the diagnosis (diagnosis_review.hpp) and the preemption
// controller read codes, never plugin names.
//
//   filters  ML predicates, static (memoised) then dynamic   src/ml/predicates.cpp (via Scheduler)
//            locality_hold (held, per job)                     broker/scheduling/locality_hold_filter.cpp
//            reservation, capacity_hold, backfill,
//            preemption_pending                                broker/scheduling/capacity_guard_filter.cpp
//            budget, rate_limit (the claim's CAS answers)      broker/scheduling/claim_refusals.cpp
//            worker_quiet, worker_lost (liveness)              broker/scheduling/liveness_filter.cpp
//   scores   affinity, locality, packing                       src/ml/scoring.cpp (via Scheduler)
#pragma once
#include <string>
#include <vector>

#include "broker/scheduling/scheduler.hpp"
#include "broker/store/job_reads.hpp"
#include "broker/store/job_store.hpp"
#include "broker/store/preemption_store.hpp"
#include "ojs/ml/device_assignment.hpp"

namespace ojs::broker {

struct CapacityGuards;

// One verdict per class of `classes` for this worker, filters and scores applied.
// `guards_read`, when given, gets the capacity guards the filters read (a caller
// that also asks whether a hold keeps the worker does not read them again).
std::vector<ClassVerdict> run_fetch_filters(JobReads& reads, PreemptionStore& marks, const Scheduler& scheduler,
                                            const std::string& queue, const ClassSet& classes, const WorkerView& worker,
                                            const ml::AssignmentOptions& assignment, CapacityGuards* guards_read = nullptr);

}  // namespace ojs::broker
