// The FETCH side of backfill (preemption/backfill.hpp plans the reservations): on
// a reserved worker, a class that fits beside the held GPUs is unaffected; one that
// needs them may run only jobs declared to end before the reservation's start (the
// per-job test is claim.lua's, _lib_backfill.lua; C++ passes the start as
// EligibleClass::backfill_before_ms). Pure code, no Redis.
#pragma once
#include <cstdint>
#include <vector>

#include "ojs/ml/capabilities.hpp"
#include "ojs/ml/predicates.hpp"
#include "ojs/ml/requirements.hpp"
#include "ojs/ml/worker_load.hpp"

namespace ojs::broker {

// GPUs a reservation for a job of `needed` GPUs keeps from others right now: the
// free ones, up to what the job needs (those running now are its own to wait for).
int backfill_held_gpus(const ml::Capabilities& caps, const ml::WorkerLoad& load, int needed);

enum class Beside { fits, needs_held, no };
// Does a class (already eligible on the worker as it is) fit beside the GPUs held
// for a reservation? `devices` gets the assignment that avoids them when it does.
Beside fits_beside_hold(const ml::Requirements& req, const ml::Capabilities& caps, const ml::WorkerLoad& load,
                        int held_gpus, const ml::AssignmentOptions& assignment, std::vector<int>* devices);

// Why claim skipped a class on held GPUs (predicate `backfill`): what its oldest
// job declared (seconds, -1: no ext_ml_estimated_duration_seconds) against the start.
ml::Judgement backfill_refusal(long long declared_s, std::int64_t start_ms);

}  // namespace ojs::broker
