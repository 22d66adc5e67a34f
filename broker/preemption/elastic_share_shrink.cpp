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

}  // namespace ojs::broker
