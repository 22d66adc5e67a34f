// A worker pool (ojs-fair-scheduling.md §6.1): the queues its workers consume, in
// order, their weights, the strategy that orders them at FETCH and a cap on the
// pool's running jobs. Parsed from either body the public documents use, kept as JSON.
#pragma once
#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "broker/scheduling/queue_order.hpp"

namespace ojs::broker::pools {

struct Pool {
  std::string name;
  std::vector<std::string> queues;        // the listed order (strict, round-robin, ties)
  std::map<std::string, long long> weights;  // queue -> positive weight; a queue not named weighs 1
  PoolStrategy strategy = PoolStrategy::round_robin;  // the spec's default
  std::optional<long long> concurrency;   // at most this many of the pool's queues' jobs running at once
  std::string created_at, updated_at;     // RFC 3339

  long long weight_of(const std::string& queue) const;
};

inline constexpr std::size_t kMaxQueuesPerPool = 64;
inline constexpr std::size_t kMaxPools = 1000;

// The PUT body: the spec's {queues: [..], weights: {q: n}, strategy, concurrency} or the
// public suite's {name, strategy, queues: {q: {weight: n}}} (queues in name order).
// Throws invalid_field naming the field and its rule.
Pool parse_pool(const std::string& name, const nlohmann::json& body);
// The pool name in a path: a queue name's rule.
void require_pool_name(const std::string& name);

nlohmann::json to_json(const Pool& pool);  // {name, queues, weights, strategy, concurrency?, created_at, updated_at}
Pool pool_from_json(const nlohmann::json& stored);

}  // namespace ojs::broker::pools
