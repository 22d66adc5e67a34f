// Backfill rules (pure): declared ends, the earliest start on a worker, and what
// a reservation holds.
#include "broker/preemption/backfill.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "broker/store/priority_score.hpp"
#include "ojs/core/time.hpp"

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

void add_phantom(ml::WorkerLoad& load, const ml::Capabilities& caps, const std::string& name, int gpus,
                 const std::vector<int>& devices) {
  if (gpus <= 0) return;
  load.active.push_back({name, gpus, {}, {}, std::nullopt});  // busy without a count: no memory share
  int taken = 0;
  for (int d : devices)
    if (taken < gpus && load.busy_devices.insert(d).second) ++taken;
  for (auto it = caps.devices.rbegin(); it != caps.devices.rend() && taken < gpus; ++it)
    if (load.busy_devices.insert(it->index).second) ++taken;
}

int backfill_held_gpus(const ml::Capabilities& caps, const ml::WorkerLoad& load, int needed) {
  return std::clamp(caps.gpu.count - load.gpus_in_use(), 0, needed);
}

Beside fits_beside_hold(const ml::Requirements& req, const ml::Capabilities& caps, const ml::WorkerLoad& load,
                        int held_gpus, const ml::AssignmentOptions& assignment, std::vector<int>* devices) {
  if (req.gpu_count() == 0 || held_gpus <= 0) return Beside::fits;
  ml::WorkerLoad with_hold = load;
  add_phantom(with_hold, caps, "backfill-hold", held_gpus, {});
  ml::Judgement j = ml::judge_dynamic(req, &caps, with_hold, assignment);
  if (j.eligible()) {
    if (devices) *devices = std::move(j.devices);
    return Beside::fits;
  }
  return ml::fits(req, &caps, load, assignment) ? Beside::needs_held : Beside::no;
}

ml::Judgement backfill_refusal(long long declared_s, std::int64_t start_ms) {
  ml::Refusal r;
  r.predicate = "backfill";
  r.code = ml::VerdictCode::held;
  r.summary = "hold GPUs for a backfill reservation that the job would overrun";
  const std::string start = format_rfc3339(start_ms);
  r.reason = "GPUs are held from " + start + " for a waiting job (backfill reservation); a job may use them only if its " +
             "ext_ml_estimated_duration_seconds ends before then, and " +
             (declared_s < 0 ? std::string("this one declares none") : "this one declares " + std::to_string(declared_s) + " s");
  r.facts = {{"reservation_start", start}, {"declared_seconds", static_cast<double>(declared_s)}};
  ml::Judgement j;
  j.refusals.push_back(std::move(r));
  return j;
}

}  // namespace ojs::broker
