// How elastic gangs of one priority band share the nodes they compete for: the one
// rule the gang decision (gang_decision.cpp) applies when a worker could grow, join
// or start one of several such gangs. Pure: no Redis.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "broker/store/fair_shares.hpp"

namespace ojs::broker {

// An elastic gang competing for a worker: its members now (0 for one that waits to
// form), its place in the queue's order and its job's tenant ("" = none).
struct ElasticContender {
  std::string job_id;
  int members = 0;
  double score = 0;
  std::string tenant;
};

// The index of the contender furthest below its fair share of the nodes; empty: none.
// - Under a `fair` queue's tenant order (`shares`: the tenants' shares as the claim
//   weighs them, their decayed use and what they hold now over their weights), the
//   gang of the tenant with the lowest share first: tenants weighted 1:3 end up with
//   the nodes split about 1:3, and over time with the GPU-time split so.
// - Between gangs of one tenant (or of any tenants without `shares`), each an equal
//   share of the nodes they hold together plus the one offered: the one with the
//   fewest members, so two equal 8-node gangs on 8 nodes end up 4/4.
// - Equally far (equal shares: the smaller gang), the first in the queue's order.
std::size_t furthest_below_share(const std::vector<ElasticContender>& contenders, const FairShares* shares = nullptr);

}  // namespace ojs::broker
