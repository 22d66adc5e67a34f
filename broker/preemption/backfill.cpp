// Backfill rules (pure): declared ends, the earliest start on a worker, the plan.
#include "broker/preemption/backfill.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "broker/store/priority_score.hpp"

namespace ojs::broker {

std::optional<std::int64_t> declared_end(std::int64_t started_ms, std::optional<int> estimated_s,
                                         std::optional<std::int64_t> execution_deadline_ms) {
  std::optional<std::int64_t> end;
  if (estimated_s) end = started_ms + *estimated_s * 1000LL;
  if (execution_deadline_ms && *execution_deadline_ms > 0 && (!end || *execution_deadline_ms < *end)) end = execution_deadline_ms;
  return end;
}

std::optional<std::int64_t> earliest_start(const ml::Requirements& req, const ml::Capabilities& caps,
                                           const std::vector<RunningJob>& running, std::int64_t now,
                                           const ml::AssignmentOptions& assignment, const std::vector<int>& drained) {
  if (!ml::fits_static(req, &caps)) return std::nullopt;
  std::set<std::string> gone;
  if (ml::fits(req, &caps, load_without(running, gone, drained), assignment)) return now;
  std::vector<const RunningJob*> by_end;
  for (const auto& r : running) by_end.push_back(&r);
  // Jobs that declared no end never leave (as far as planning can tell): last.
  std::stable_sort(by_end.begin(), by_end.end(), [](const RunningJob* a, const RunningJob* b) {
    if (a->declared_end_ms.has_value() != b->declared_end_ms.has_value()) return a->declared_end_ms.has_value();
    return a->declared_end_ms.value_or(0) < b->declared_end_ms.value_or(0);
  });
  for (const auto* r : by_end) {
    if (!r->declared_end_ms) return std::nullopt;
    gone.insert(r->job_id);
    if (ml::fits(req, &caps, load_without(running, gone, drained), assignment)) return std::max(now, *r->declared_end_ms);
  }
  return std::nullopt;
}

std::tuple<int, double, double> backfill_order(double score, int gpus) {
  return {-gpus, static_cast<double>(unpack_score(score).band), score};
}

BackfillPlan plan_backfill(const ml::Requirements& req, const std::vector<BackfillCandidate>& candidates, std::int64_t now,
                           const ml::AssignmentOptions& assignment) {
  BackfillPlan plan;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const auto start = earliest_start(req, *candidates[i].caps, candidates[i].running, now, assignment, candidates[i].drained);
    if (!start) continue;
    if (*start <= now) return {true, static_cast<int>(i), now};
    if (plan.candidate < 0 || *start < plan.start_ms) {
      plan.candidate = static_cast<int>(i);
      plan.start_ms = *start;
    }
  }
  return plan;
}

}  // namespace ojs::broker
