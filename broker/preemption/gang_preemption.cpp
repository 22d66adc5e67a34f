// Preemption for capacity on behalf of a waiting gang: it needs one worker per member,
// so the victims are chosen over as many workers at once (leader only). Members of
// elastic gangs above their minimum leave first (the gang shrinks instead of
// stopping); whole jobs go only when that is not enough.
#include <algorithm>

#include "broker/preemption/capacity_plan.hpp"
#include "broker/preemption/preemption.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker {

namespace {

// The workers already holding a member of the waiting gang (it forms): they need no freeing.
std::vector<std::string> members_held(const std::optional<JobRecord>& gang) {
  std::vector<std::string> out;
  if (!gang || !gang->has("gang_workers")) return out;
  const auto workers = nlohmann::json::parse(gang->get("gang_workers"), nullptr, false);
  if (!workers.is_array()) return out;
  for (const auto& w : workers)
    if (w.is_string()) out.push_back(w.get<std::string>());
  return out;
}

}  // namespace

bool PreemptionController::preempt_for_gang(const std::string& queue, const std::string& class_id, const std::string& preemptor,
                                            int rank, const ml::Requirements& req, const std::vector<const LiveWorker*>& workers,
                                            const std::vector<PreemptionSite>& sites, const VictimFilter& allowed,
                                            std::set<std::string>& held_workers) {
  const auto held = members_held(jobs_.get(queue, preemptor));
  std::vector<PreemptionSite> open;
  std::vector<const LiveWorker*> open_workers;
  for (std::size_t i = 0; i < workers.size(); ++i) {
    if (std::find(held.begin(), held.end(), workers[i]->info.id) != held.end()) continue;
    open.push_back(sites[i]);
    open_workers.push_back(workers[i]);
  }
  const int needed = req.hard.gang.size - static_cast<int>(held.size());
  if (needed <= 0) return false;
  const auto plan = plan_gang_capacity_preemption(
      req, rank, needed, open, [&](std::size_t i) { return running_on(open_workers[i]->info.id); }, assignment_options(config_),
      allowed);
  // Enough workers take a member as things stand: if the queue's budget is what keeps
  // the gang waiting, free budget held by lower-class work (a member's charge at a time).
  if (plan.fitting >= needed) return preempt_for_budget(queue, preemptor, rank, {req.gpu_count(), 1, 0, 0}, allowed);
  bool started = false;
  for (const auto& [site, choice] : plan.freed) {
    const std::string& worker = open_workers[site]->info.id;
    // A victim that changed meanwhile stops the rest: the next pass decides again.
    if (!mark_and_hold(worker, {preemptor, queue, class_id, rank, req.gpu_count()}, choice.victims)) break;
    held_workers.insert(worker);
    started = true;
  }
  return started;
}

}  // namespace ojs::broker
