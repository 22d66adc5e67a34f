// Filter plugin `worker_quiet` / `worker_lost`: a worker told to stop taking work
// (quiet, drain, terminate) or silent past --worker-dead-after-ms is not eligible for
// anything, whatever its last judgement said. FETCH never claims for such a worker
// (the edge answers its directive); the diagnosis applies this filter to every
// recorded judgement, so a dead or quiet worker is never counted eligible.
#pragma once
#include <cstdint>
#include <optional>

#include "broker/workers/liveness.hpp"
#include "ojs/ml/predicates.hpp"

namespace ojs::broker {

// worker_lost (code wait: it may come back), else worker_quiet (code wait: an admin
// may resume it), else nothing. `worker` empty: forgotten, i.e. lost.
std::optional<ml::Refusal> liveness_refusal(const std::optional<WorkerInfo>& worker, std::int64_t now_ms,
                                            std::int64_t dead_after_ms);

}  // namespace ojs::broker
