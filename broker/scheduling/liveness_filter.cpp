#include "broker/scheduling/liveness_filter.hpp"

#include <string>

namespace ojs::broker {

std::optional<ml::Refusal> liveness_refusal(const std::optional<WorkerInfo>& worker, std::int64_t now_ms,
                                            std::int64_t dead_after_ms) {
  ml::Refusal r;
  r.code = ml::VerdictCode::wait;
  if (!worker || worker_lost(*worker, now_ms, dead_after_ms)) {
    const std::int64_t silent_s = worker ? (now_ms - worker->last_seen_ms) / 1000 : -1;
    r.predicate = "worker_lost";
    r.reason = worker ? "has been silent for " + std::to_string(silent_s) + " s, past --worker-dead-after-ms (" +
                            std::to_string(dead_after_ms) + " ms)"
                      : "is no longer known to the broker (silent past its retention)";
    r.summary = "are lost (silent past --worker-dead-after-ms)";
    if (worker) r.facts = {{"silent_ms", static_cast<double>(now_ms - worker->last_seen_ms)}, {"dead_after_ms", static_cast<double>(dead_after_ms)}};
    return r;
  }
  if (worker->state == "running") return std::nullopt;
  r.predicate = "worker_quiet";
  r.reason = "is " + worker->state + ": it takes no new jobs until resumed";
  r.summary = "are quiet (take no new jobs)";
  r.facts = {{"state", worker->state}};
  return r;
}

}  // namespace ojs::broker
