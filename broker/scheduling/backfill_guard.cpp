// The backfill guard's rules (pure): what a reservation holds now, whether a class
// fits beside it, and the refusal when a job would overrun it.
#include "broker/scheduling/backfill_guard.hpp"

#include <algorithm>
#include <string>

#include "broker/scheduling/held_gpus.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker {

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
