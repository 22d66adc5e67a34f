// How equal elastic gangs share the nodes they compete for: the one rule the gang
// decision (gang_decision.cpp) applies when a worker could grow, join or start one of
// several elastic gangs of the same priority band. Pure: no Redis.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace ojs::broker {

// An elastic gang competing for a worker: its members now (0 for one that waits to
// form) and its place in the queue's order.
struct ElasticContender {
  std::string job_id;
  int members = 0;
  double score = 0;
};

// The index of the contender furthest below its fair share of the nodes they hold
// together plus the one offered (each an equal share: (sum of members + 1) / n);
// equally far, the first in the queue's order. So two equal 8-node gangs on 8 nodes
// end up 4/4, the next node always going to the smaller one. Empty: none.
std::size_t furthest_below_share(const std::vector<ElasticContender>& contenders);

}  // namespace ojs::broker
