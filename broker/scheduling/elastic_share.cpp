#include "broker/scheduling/elastic_share.hpp"

#include <tuple>

#include "broker/scheduling/fair_order.hpp"

namespace ojs::broker {

std::size_t furthest_below_share(const std::vector<ElasticContender>& contenders, const FairShares* shares) {
  // A job without a tenant is not shared (fair_share_of: 0), as in the claim's order.
  const auto rank = [&](const ElasticContender& c) {
    return std::make_tuple(shares ? fair_share_of(*shares, c.tenant) : 0.0, c.members, c.score);
  };
  std::size_t best = 0;
  for (std::size_t i = 1; i < contenders.size(); ++i)
    if (rank(contenders[i]) < rank(contenders[best])) best = i;
  return best;
}

}  // namespace ojs::broker
