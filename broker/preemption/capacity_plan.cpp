// The capacity preemption rule (pure): see capacity_plan.hpp.
#include "broker/preemption/capacity_plan.hpp"

#include <algorithm>
#include <set>
#include <string>

#include "broker/preemption/backfill.hpp"
#include "ojs/ml/predicates.hpp"

namespace ojs::broker {

bool may_preempt(const ml::Requirements& req, int rank) { return rank > 0 && req.scheduling.reservation_id.empty(); }

CapacityPlan plan_capacity_preemption(const ml::Requirements& req, int rank, const std::vector<PreemptionSite>& sites,
                                      const std::function<std::vector<RunningJob>(std::size_t)>& running_of,
                                      const ml::AssignmentOptions& assignment) {
  CapacityPlan plan;
  std::optional<VictimChoice> best;
  for (std::size_t i = 0; i < sites.size(); ++i) {
    const auto& site = sites[i];
    if (!site.caps || !ml::fits_static(req, site.caps)) continue;
    const auto running = running_of(i);
    std::set<std::string> leaving;
    for (const auto& r : running)
      if (r.preempting) leaving.insert(r.job_id);
    auto load = load_without(running, leaving, site.drained);
    if (ml::fits(req, site.caps, load, assignment)) {  // a worker can take it (or soon will): no preemption
      plan.fits_on = i;
      plan.fit_load = std::move(load);
      plan.worker.reset();
      return plan;
    }
    auto choice = choose_victims(req, rank, *site.caps, running, assignment, site.drained);
    if (choice && (!best || cheaper(*choice, *best))) {
      best = std::move(choice);
      plan.worker = i;
    }
  }
  if (best) plan.choice = std::move(*best);
  return plan;
}

void hold_freed_gpus(ml::WorkerLoad& load, const ml::Capabilities& caps, const std::string& for_job,
                     const std::vector<RunningJob>& victims, int needed_gpus) {
  int held = 0;  // the victims' GPUs: still running (busy in the load) or freed (held here)
  for (const auto& victim : victims) {
    const bool running = std::any_of(load.active.begin(), load.active.end(), [&](const ml::ActiveJob& a) { return a.job_id == victim.job_id; });
    if (!running) add_phantom(load, caps, "hold:" + for_job, victim.gpus, victim.devices);
    held += victim.gpus;
  }
  add_phantom(load, caps, "hold:" + for_job, needed_gpus - held, {});  // the free GPUs it counted on
}

std::int64_t victims_gone_by(const std::vector<RunningJob>& victims, std::int64_t now_ms) {
  std::int64_t last = now_ms;
  for (const auto& v : victims) last = std::max(last, now_ms + static_cast<std::int64_t>(v.grace_period_s) * 1000);
  return last;
}

}  // namespace ojs::broker
