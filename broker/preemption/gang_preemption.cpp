// Preemption for capacity on behalf of a waiting gang: it needs one worker per member,
// so the victims are chosen over as many workers at once (leader only). Members of
// elastic gangs above their minimum leave first (the gang shrinks instead of
// stopping); whole jobs go only when that is not enough. A waiting elastic gang that
// lower-class work cannot make room for takes members of equal elastic gangs above
// their share (elastic_share_shrink.hpp).
#include <algorithm>

#include "broker/preemption/capacity_plan.hpp"
#include "broker/preemption/elastic_share_shrink.hpp"
#include "broker/preemption/preemption.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker {

namespace {

// The workers already holding a member of the waiting gang (it forms): they need no freeing.
std::vector<std::string> members_held(const std::optional<JobRecord>& gang) { return gang ? gang->gang_workers() : std::vector<std::string>{}; }

}  // namespace

bool PreemptionController::preempt_for_gang(const std::string& queue, const std::string& class_id, const std::string& preemptor,
                                            int rank, const ml::Requirements& req, const std::vector<const LiveWorker*>& workers,
                                            const std::vector<PreemptionSite>& sites, const VictimFilter& allowed,
                                            const std::optional<FairShares>& shares, std::set<std::string>& held_workers) {
  const auto waiting = jobs_.get(queue, preemptor);
  const auto held = members_held(waiting);
  std::vector<PreemptionSite> open;
  std::vector<const LiveWorker*> open_workers;
  for (std::size_t i = 0; i < workers.size(); ++i) {
    if (std::find(held.begin(), held.end(), workers[i]->info.id) != held.end()) continue;
    open.push_back(sites[i]);
    open_workers.push_back(workers[i]);
  }
  const int needed = req.hard.gang.size - static_cast<int>(held.size());
  if (needed <= 0) return false;
  std::vector<std::optional<std::vector<RunningJob>>> seen(open.size());  // each worker's jobs, read once
  const auto running_of = [&](std::size_t i) {
    if (!seen[i]) seen[i] = running_on(open_workers[i]->info.id);
    return *seen[i];
  };
  auto plan = plan_gang_capacity_preemption(req, rank, needed, open, running_of, assignment_options(config_), allowed);
  // Enough workers take a member as things stand: if the queue's budget is what keeps
  // the gang waiting, free budget held by lower-class work (a member's charge at a time).
  if (plan.fitting >= needed) return preempt_for_budget(queue, preemptor, rank, {req.gpu_count(), 1, 0, 0}, allowed);
  if (plan.freed.empty() && req.hard.gang.elastic()) {
    const auto forming = marks_.forming_gang(queue);
    plan = plan_share_shrink({queue, rank, waiting ? waiting->get("tenant") : std::string(), static_cast<int>(held.size()),
                              forming && *forming != preemptor},
                             req, needed, open, running_of, allowed, shares);
  }
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

GangCapacityPlan PreemptionController::plan_share_shrink(const WaitingElasticGang& waiting, const ml::Requirements& req, int needed,
                                                         const std::vector<PreemptionSite>& open,
                                                         const std::function<std::vector<RunningJob>(std::size_t)>& running_of,
                                                         const VictimFilter& allowed, const std::optional<FairShares>& shares) {
  const auto weight = [&](const std::string& t) { return shares ? shares->weight(t) : 1.0; };
  return broker::plan_share_shrink(waiting, req, needed, open, running_of, assignment_options(config_), allowed, weight);
}

}  // namespace ojs::broker
