#include "broker/scheduling/queue_order.hpp"

#include <algorithm>
#include <numeric>
#include <utility>

#include "broker/store/fair_shares.hpp"

namespace ojs::broker {

namespace {

constexpr std::pair<PoolStrategy, std::string_view> kNames[] = {{PoolStrategy::strict, "strict"},
                                                                {PoolStrategy::round_robin, "round-robin"},
                                                                {PoolStrategy::weighted, "weighted"},
                                                                {PoolStrategy::least_loaded, "least-loaded"}};

// Queues as FairShares' tenants: each one's fraction of the pool's recent starts is its
// decayed use; nothing is "held" (a dispatch is an event, not a resource kept).
FairShares dispatch_shares(const std::vector<QueueTurn>& queues) {
  FairShares shares;
  double total = 0;
  for (const auto& q : queues) total += q.recent_dispatches;
  for (const auto& q : queues) shares.tenants[q.queue] = {q.weight, total > 0 ? q.recent_dispatches / total : 0, 0};
  return shares;
}

}  // namespace

std::optional<PoolStrategy> parse_pool_strategy(std::string_view name) {
  for (const auto& [strategy, text] : kNames)
    if (text == name) return strategy;
  return std::nullopt;
}

std::string_view to_string(PoolStrategy strategy) {
  for (const auto& [s, text] : kNames)
    if (s == strategy) return text;
  return "round-robin";
}

std::vector<std::string> order_pool_queues(PoolStrategy strategy, const std::vector<QueueTurn>& queues, std::uint64_t turn) {
  std::vector<std::size_t> at(queues.size());
  std::iota(at.begin(), at.end(), 0);
  switch (strategy) {
    case PoolStrategy::strict: break;
    case PoolStrategy::round_robin:
      if (!at.empty()) std::rotate(at.begin(), at.begin() + static_cast<std::ptrdiff_t>(turn % at.size()), at.end());
      break;
    case PoolStrategy::weighted: {
      const FairShares shares = dispatch_shares(queues);
      std::vector<double> share(queues.size());
      for (std::size_t i = 0; i < queues.size(); ++i) share[i] = shares.share(queues[i].queue);
      std::stable_sort(at.begin(), at.end(), [&](std::size_t a, std::size_t b) { return share[a] < share[b]; });
      break;
    }
    case PoolStrategy::least_loaded:
      std::stable_sort(at.begin(), at.end(), [&](std::size_t a, std::size_t b) { return queues[a].backlog > queues[b].backlog; });
      break;
  }
  std::vector<std::string> out;
  out.reserve(at.size());
  for (auto i : at) out.push_back(queues[i].queue);
  return out;
}

double dispatches_last_minute(long long current_minute, long long previous_minute, std::int64_t ms_into_minute) {
  const double inside = 1.0 - static_cast<double>(std::clamp<std::int64_t>(ms_into_minute, 0, 60000)) / 60000.0;
  return static_cast<double>(current_minute) + static_cast<double>(previous_minute) * inside;
}

}  // namespace ojs::broker
