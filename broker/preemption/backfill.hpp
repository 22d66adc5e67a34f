// Backfill (EASY backfilling, Lifka 1995; docs/matching.md#backfill): the rules,
// as pure code shared by the broker (preemption controller, FETCH guard) and
// bench/simulator. No Redis here.
//   plan   : when would a waiting job fit on a worker, given the declared ends of
//            what runs there (earliest_start); the worker where that is soonest
//            gets a reservation (a CapacityHold with backfill_start_ms).
//   FETCH  : what a reservation keeps from other classes: scheduling/backfill_guard.hpp.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "broker/preemption/victims.hpp"
#include "ojs/ml/capabilities.hpp"
#include "ojs/ml/predicates.hpp"
#include "ojs/ml/requirements.hpp"
#include "ojs/ml/worker_load.hpp"

namespace ojs::broker {

// The end a running job declared: started + ext_ml_estimated_duration_seconds,
// capped by its execution deadline (timeout); nullopt when it declared neither.
std::optional<std::int64_t> declared_end(std::int64_t started_ms, std::optional<int> estimated_s,
                                         std::optional<std::int64_t> execution_deadline_ms);

// When `req` would fit on this worker if the running jobs leave at their declared
// ends: `now` when it fits already, nullopt when it needs a job that declared no end
// (or never fits). Jobs leave in order of their ends.
// `drained`: the worker's drained devices, never available.
std::optional<std::int64_t> earliest_start(const ml::Requirements& req, const ml::Capabilities& caps,
                                           const std::vector<RunningJob>& running, std::int64_t now,
                                           const ml::AssignmentOptions& assignment = {}, const std::vector<int>& drained = {});

// The order in which waiting class heads get reservations: larger jobs first (the
// ones the greedy claim starves; a small job gets the next GPU that frees anyway),
// then band (priority class and priority under `priority`), then FIFO. `score` is
// the ready-set score (band * 2^40 + seq). Band first instead left the 8-GPU jobs
// without workers in the simulator (docs/benchmarks.md#backfill).
std::tuple<int, double, double> backfill_order(double score, int gpus);

// A worker the planner may reserve: its capabilities and what runs there.
struct BackfillCandidate {
  const ml::Capabilities* caps = nullptr;
  std::vector<RunningJob> running;  // with declared_end_ms
  std::vector<int> drained;         // devices an admin drained (per-GPU drain)
};
struct BackfillPlan {
  bool fits_now = false;     // some candidate can take the job as things stand: no reservation
  int candidate = -1;        // else the one where it can start soonest (-1: none declares enough)
  std::int64_t start_ms = 0;
};
BackfillPlan plan_backfill(const ml::Requirements& req, const std::vector<BackfillCandidate>& candidates, std::int64_t now,
                           const ml::AssignmentOptions& assignment = {});


}  // namespace ojs::broker
