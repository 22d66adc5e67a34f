#include "broker/scheduling/elastic_share.hpp"

namespace ojs::broker {

std::size_t furthest_below_share(const std::vector<ElasticContender>& contenders) {
  // With equal shares the one furthest below is the one with the fewest members.
  std::size_t best = 0;
  for (std::size_t i = 1; i < contenders.size(); ++i) {
    const auto& c = contenders[i];
    const auto& b = contenders[best];
    if (c.members < b.members || (c.members == b.members && c.score < b.score)) best = i;
  }
  return best;
}

}  // namespace ojs::broker
