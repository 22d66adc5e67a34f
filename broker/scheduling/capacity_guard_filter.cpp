// Filter plugins `capacity_hold`, `reservation` and `backfill` (code held; a worker
// outside the reservation a job needs: unresolvable there) and `preemption_pending`
// for the preemptor's own class, judged against a hypothetical load: what runs plus
// what is held for others.
#include "broker/scheduling/capacity_guard_filter.hpp"

#include <algorithm>

#include "broker/scheduling/backfill_guard.hpp"
#include "broker/scheduling/held_gpus.hpp"
#include "broker/scheduling/preemption_pending_filter.hpp"
#include "ojs/core/error.hpp"
#include "ojs/core/time.hpp"
#include "ojs/ml/device_assignment.hpp"

namespace ojs::broker {

using nlohmann::json;

namespace {

ml::Refusal refusal(const std::string& predicate, const std::string& reason, const std::string& summary,
                    ml::VerdictCode code = ml::VerdictCode::held) {
  ml::Refusal r;
  r.predicate = predicate;
  r.reason = reason;
  r.summary = summary;
  r.code = code;
  return r;
}

}  // namespace

CapacityGuards read_capacity_guards(JobReads& reads, PreemptionStore& marks, const WorkerView& worker) {
  CapacityGuards out;
  out.now_ms = now_ms();
  const GuardMarks& marked = worker.guards;  // read with the worker's contact (FetchService::fetch)
  if (marked.hold) out.hold = CapacityHold::parse(worker.worker_id, *marked.hold);
  if (out.hold && out.hold->until_ms <= out.now_ms) out.hold.reset();
  if (out.hold && !hold_still_wanted(reads, *out.hold)) out.hold.reset();  // void once the preemptor is no longer waiting
  if (marked.reservations) out.reservations = load_reservations(marks);
  return out;
}

void apply_capacity_guards(const CapacityGuards& guards, const Scheduler& scheduler, const std::string& queue,
                           const ClassSet& classes, const WorkerView& worker, std::vector<ClassVerdict>& verdicts,
                           const ml::AssignmentOptions& assignment) {
  const auto now = guards.now_ms;
  const std::optional<CapacityHold>& hold = guards.hold;
  const std::map<std::string, Reservation>& reservations = guards.reservations;
  if (!hold && reservations.empty()) return;
  const ml::Capabilities* caps = worker.capabilities ? &*worker.capabilities : nullptr;

  for (auto& v : verdicts) {
    auto cit = classes.classes.find(v.class_id);
    if (cit == classes.classes.end()) continue;
    const ml::Requirements& req = scheduler.requirements(v.class_id, cit->second);
    const auto& named = req.scheduling.reservation_id;
    if (!named.empty()) {
      auto it = reservations.find(named);
      if (it == reservations.end() || !it->second.active(now))
        v.judgement.refusals.push_back(refusal("reservation", "job needs reservation " + named + ", which does not exist or has expired",
                                               "wait for reservation " + named + " (missing or expired)"));
      else if (!it->second.contains(worker.worker_id, caps))
        v.judgement.refusals.push_back(refusal("reservation", "is outside reservation " + named + ", which the job needs",
                                               "are outside reservation " + named, ml::VerdictCode::unresolvable));
      if (!v.judgement.eligible()) continue;
    }
    const bool own_class = hold && hold->queue == queue && hold->class_id == v.class_id;
    if (own_class && hold->backfill_start_ms == 0 && !v.judgement.eligible() && v.judgement.code() != ml::VerdictCode::unresolvable) {
      std::vector<std::string> victims;
      for (const auto& victim : hold->victims) victims.push_back(victim.job_id);
      v.judgement.refusals.push_back(preemption_pending_refusal(hold->for_job, victims, hold->until_ms));
    }
    if (!v.judgement.eligible() || !caps || req.gpu_count() == 0) continue;

    if (hold && hold->backfill_start_ms > 0 && !own_class) {
      // A class that needs the held GPUs may take only jobs declared to
      // end before the reservation starts (claim.lua decides per job).
      std::vector<int> devices;
      const int held = backfill_held_gpus(*caps, worker.load, hold->gpus);
      const Beside beside = fits_beside_hold(req, *caps, worker.load, held, assignment, &devices);
      if (beside == Beside::needs_held && req.hard.gang.size > 0) {  // claim_gang has no per-job test: a gang waits
        v.judgement.refusals.push_back(backfill_refusal(-1, hold->backfill_start_ms).refusals.front());
        continue;
      }
      if (beside == Beside::needs_held) v.claim.backfill_before_ms = hold->backfill_start_ms;
      else if (beside == Beside::fits && held > 0) {
        v.judgement.devices = devices;
        v.claim.devices_json = devices.empty() ? std::string() : json(devices).dump();
        v.claim.gpu_memory_mb = ml::gpu_memory_charge_mb(caps->devices, devices, req.hard.gpu.memory_gb, req.gpu_count());
      }
    }
    // Hypothetical load: what runs now plus capacity held for others.
    ml::WorkerLoad load = worker.load;
    std::string held_for;
    std::string predicate;
    if (hold && hold->backfill_start_ms == 0 && !own_class) {
      hold_freed_gpus(load, *caps, hold->for_job, hold->victims, hold->gpus);
      held_for = "GPUs freed by preemption are held for job " + hold->for_job + " until " + format_rfc3339(hold->until_ms);
      predicate = "capacity_hold";
    }
    for (const auto& [rid, r] : reservations) {
      if (rid == named || !r.active(now) || !r.contains(worker.worker_id, caps)) continue;
      int held = r.gpus > 0 ? r.gpus : caps->gpu.count;
      for (const auto& a : worker.load.active) {
        auto l = a.labels.find("reservation_id");
        if (l != a.labels.end() && l->second == rid) held -= a.gpus;
      }
      if (held <= 0) continue;
      add_phantom(load, *caps, "reservation:" + rid, held, {});
      held_for += std::string(held_for.empty() ? "" : "; ") + std::to_string(held) + " GPU(s) are held by reservation " + rid;
      if (predicate.empty()) predicate = "reservation";
    }
    if (held_for.empty()) continue;
    ml::Judgement j = ml::judge_dynamic(req, caps, load, assignment);
    if (j.eligible()) {
      v.judgement.devices = j.devices;
      v.claim.devices_json = j.devices.empty() ? std::string() : json(j.devices).dump();
      continue;
    }
    const std::string base = j.refusals.empty() ? std::string() : j.refusals.front().reason + ": ";
    v.judgement.refusals.push_back(refusal(predicate, base + held_for,
                                           predicate == "capacity_hold" ? "hold freed GPUs for a preempting higher-class job"
                                                                        : "hold GPUs for a reservation"));
  }
}

}  // namespace ojs::broker
