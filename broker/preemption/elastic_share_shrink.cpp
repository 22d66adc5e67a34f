#include "broker/preemption/elastic_share_shrink.hpp"

#include <algorithm>
#include <cmath>

namespace ojs::broker {

std::map<std::string, int> spare_above_share(const std::vector<RunningJob>& seen, const WaitingElasticGang& waiting,
                                             const std::function<double(const std::string& tenant)>& weight) {
  std::map<std::string, const RunningJob*> gangs;  // one member stands for its gang
  for (const auto& r : seen)
    if (r.gang_now > 0 && r.queue == waiting.queue && r.class_rank == waiting.class_rank) gangs.emplace(r.job_id, &r);
  if (gangs.empty()) return {};
  double nodes = waiting.held, weights = weight(waiting.tenant);
  for (const auto& [_, g] : gangs) {
    nodes += g->gang_now;
    weights += weight(g->tenant);
  }
  std::map<std::string, int> out;
  if (weights <= 0) return out;
  for (const auto& [id, g] : gangs) {
    // A share's fraction of a node stays with the gang: rounding up never takes a member below its share.
    const int keep = std::max(g->gang_min, static_cast<int>(std::ceil(nodes * weight(g->tenant) / weights - 1e-9)));
    if (g->gang_now > keep) out[id] = g->gang_now - keep;
  }
  return out;
}

GangCapacityPlan plan_share_shrink(const WaitingElasticGang& waiting, const ml::Requirements& req, int needed,
                                   const std::vector<PreemptionSite>& open,
                                   const std::function<std::vector<RunningJob>(std::size_t)>& running_of,
                                   const ml::AssignmentOptions& assignment, const VictimFilter& allowed,
                                   const std::function<double(const std::string& tenant)>& weight) {
  if (waiting.another_forming) return {};
  std::vector<RunningJob> all;
  for (std::size_t i = 0; i < open.size(); ++i)
    for (auto& r : running_of(i)) all.push_back(std::move(r));
  const auto spare = spare_above_share(all, waiting, weight);
  if (spare.empty()) return {};
  const int rank = waiting.class_rank;
  const auto cut = [&](std::size_t i) {
    auto running = running_of(i);
    for (auto& r : running)
      if (const auto it = spare.find(r.job_id); it != spare.end() && r.class_rank == rank) {
        r.gang_spare = std::min(r.gang_spare, it->second);
        r.leaves = r.leaves && r.gang_spare > 0;
        r.preemptible = r.preemptible || r.leaves;
      }
    return running;
  };
  const VictimFilter equal_or_lower = [&](const RunningJob& r) {
    if (r.class_rank < rank) return !allowed || allowed(r);
    return r.leaves && spare.count(r.job_id) > 0;
  };
  return plan_gang_capacity_preemption(req, rank + 1, needed, open, cut, assignment, equal_or_lower);
}

}  // namespace ojs::broker
