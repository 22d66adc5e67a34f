#include "broker/pools/pool_fetch_order.hpp"

#include <algorithm>
#include <numeric>

#include "ojs/core/error.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker::pools {

namespace {

bool contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

// What the strategy weighs, and the running jobs when the pool caps them.
PoolStore::QueueReadRequest what_to_read(const Pool& pool, std::int64_t now, const PoolFetchOrder::ReadyClasses& ready_classes) {
  PoolStore::QueueReadRequest what;
  what.minute = now / 60000;
  what.dispatched = pool.strategy == PoolStrategy::weighted;
  what.active = pool.concurrency.has_value();
  if (pool.strategy == PoolStrategy::least_loaded)
    for (const auto& q : pool.queues) what.ready_classes.push_back(ready_classes(q));
  return what;
}

}  // namespace

// The definition of `name` as of `version` (nullopt: the cached one, read on first
// use). An unknown pool is not cached: its FETCH reads again (and answers 404).
std::shared_ptr<const Pool> PoolFetchOrder::cached(const std::string& name, const std::optional<std::string>& version) {
  {
    std::lock_guard lock(mutex_);
    if (!version_.empty() && (!version || *version == version_)) {
      const auto it = cache_.find(name);
      if (it != cache_.end()) return it->second;
    }
  }
  // The version is read before the definition: a write between the two leaves a newer
  // definition under an older version, which the next FETCH's read replaces.
  const std::string at = version ? *version : store_.version();
  const auto text = store_.get(name);
  if (!text) return nullptr;
  auto pool = std::make_shared<const Pool>(pool_from_json(nlohmann::json::parse(*text)));
  std::lock_guard lock(mutex_);
  if (at != version_) {
    cache_.clear();
    version_ = at;
  }
  if (cache_.size() >= kMaxPools) cache_.clear();
  return cache_[name] = pool;
}

std::uint64_t PoolFetchOrder::turn_of(const std::string& name) {
  std::lock_guard lock(mutex_);
  const auto it = turns_.find(name);
  return it == turns_.end() ? 0 : it->second;
}

void PoolFetchOrder::note_served(const std::string& name, const std::string& queue) {
  const auto pool = cached(name, std::nullopt);
  if (!pool) return;
  const auto at = std::find(pool->queues.begin(), pool->queues.end(), queue);
  if (at == pool->queues.end()) return;
  std::lock_guard lock(mutex_);
  if (turns_.size() >= kMaxPools && !turns_.count(name)) turns_.clear();
  turns_[name] = static_cast<std::uint64_t>(at - pool->queues.begin()) + 1;
}

bool PoolFetchOrder::current(const std::string& version) {
  std::lock_guard lock(mutex_);
  return version == version_;
}

PoolFetchOrder::Plan PoolFetchOrder::plan(const std::string& name, const std::vector<std::string>& named,
                                          const ReadyClasses& ready_classes) {
  require_pool_name(name);
  auto pool = cached(name, std::nullopt);
  const auto now = now_ms();
  PoolStore::QueueRead read;
  // One round trip; a second (and the definition) only when a pool was written since.
  for (int attempt = 0; pool; ++attempt) {
    read = store_.read_queues(pool->queues, what_to_read(*pool, now, ready_classes));
    if (attempt == 1 || current(read.version)) break;
    pool = cached(name, read.version);
  }
  if (!pool) throw OjsError(ErrorCode::not_found, "pool " + name + " not found", {{"pool", name}});
  // The whole pool is ordered (the shares and the rotation are the pool's), then
  // only the queues the FETCH names are kept.
  std::vector<QueueTurn> turns;
  long long running = 0;
  for (std::size_t i = 0; i < pool->queues.size(); ++i) {
    const auto& q = pool->queues[i];
    running += read.active[i];
    turns.push_back({q, static_cast<double>(pool->weight_of(q)),
                     dispatches_last_minute(read.dispatched_now[i], read.dispatched_before[i], now % 60000), read.backlog[i]});
  }
  Plan plan{order_pool_queues(pool->strategy, turns, turn_of(name)), std::nullopt};
  if (!named.empty())
    plan.queues.erase(std::remove_if(plan.queues.begin(), plan.queues.end(), [&](const std::string& q) { return !contains(named, q); }),
                      plan.queues.end());
  for (const auto& q : named)
    if (!contains(pool->queues, q)) plan.queues.push_back(q);
  if (pool->concurrency) plan.room = std::max(0LL, *pool->concurrency - running);
  return plan;
}

}  // namespace ojs::broker::pools
