// Capacity holds and reservations as FETCH refusals (predicates `capacity_hold`
// and `reservation`), judged against a hypothetical load.
#include <algorithm>

#include "broker/preemption/preemption.hpp"
#include "ojs/core/error.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker {

using nlohmann::json;

namespace {

ml::Refusal refusal(const std::string& predicate, const std::string& reason, const std::string& summary) {
  ml::Refusal r;
  r.predicate = predicate;
  r.reason = reason;
  r.summary = summary;
  return r;
}

// Adds a phantom job holding `gpus` GPUs (the given devices first, then free
// ones from the highest index) to a hypothetical load.
void add_phantom(ml::WorkerLoad& load, const ml::Capabilities& caps, const std::string& name, int gpus,
                 const std::vector<int>& devices) {
  if (gpus <= 0) return;
  load.active.push_back({name, gpus, {}});
  int taken = 0;
  for (int d : devices)
    if (taken < gpus && load.busy_devices.insert(d).second) ++taken;
  for (auto it = caps.devices.rbegin(); it != caps.devices.rend() && taken < gpus; ++it)
    if (load.busy_devices.insert(it->index).second) ++taken;
}

bool has_active(const ml::WorkerLoad& load, const std::string& id) {
  return std::any_of(load.active.begin(), load.active.end(), [&](const ml::ActiveJob& a) { return a.job_id == id; });
}

}  // namespace

void apply_capacity_guards(JobStore& store, const Scheduler& scheduler, const std::string& queue, const ClassSet& classes,
                           const WorkerView& worker, std::vector<ClassVerdict>& verdicts,
                           const ml::AssignmentOptions& assignment) {
  auto marks = store.preemption();
  const auto now = now_ms();
  const auto guards = marks.guards_for(worker.worker_id);  // one round trip
  std::optional<CapacityHold> hold;
  if (guards.hold) hold = CapacityHold::parse(worker.worker_id, *guards.hold);
  if (hold && hold->until_ms <= now) hold.reset();
  if (hold) {  // void once the preemptor is no longer waiting (claimed, cancelled)
    auto preemptor = store.get(hold->queue, hold->for_job);
    if (!preemptor || preemptor->state() != "available") hold.reset();
  }
  std::map<std::string, Reservation> reservations;
  if (guards.reservations) reservations = load_reservations(marks);
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
                                               "are outside reservation " + named));
      if (!v.judgement.eligible()) continue;
    }
    if (!v.judgement.eligible() || !caps || req.gpu_count() == 0) continue;

    // Hypothetical load: what runs now plus capacity held for others.
    ml::WorkerLoad load = worker.load;
    std::string held_for;
    std::string predicate;
    if (hold && !(hold->queue == queue && hold->class_id == v.class_id)) {
      for (const auto& victim : hold->victims)
        if (!has_active(load, victim.job_id)) add_phantom(load, *caps, "hold:" + hold->for_job, victim.gpus, victim.devices);
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
