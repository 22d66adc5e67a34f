// FETCH for a worker that names its pool (`pool` in the FETCH body): which queues
// it tries, in the order of the pool's strategy (scheduling/queue_order.hpp), and how
// many jobs the pool's concurrency leaves room for. The pool's definition is cached
// per broker and checked against the pools' version in the one round trip a pool's
// FETCH adds, which also reads what the strategy weighs.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "broker/pools/pool.hpp"
#include "broker/store/pool_store.hpp"

namespace ojs::broker::pools {

class PoolFetchOrder {
 public:
  explicit PoolFetchOrder(PoolStore& store) : store_(store) {}

  struct Plan {
    std::vector<std::string> queues;  // the pool's (those the FETCH names, if it names any) in the strategy's order, then the FETCH's others
    std::optional<long long> room;    // jobs the pool's concurrency still allows (none: no cap)
  };
  // The classes of a queue whose ready sets hold its backlog (least-loaded reads them).
  using ReadyClasses = std::function<std::vector<std::string>(const std::string& queue)>;
  // 404 when no such pool.
  Plan plan(const std::string& pool, const std::vector<std::string>& named, const ReadyClasses& ready_classes);
  // The queue that gave this broker's FETCH of the pool its last job: round-robin
  // starts the next one at the queue after it (an empty queue's turn is skipped).
  void note_served(const std::string& pool, const std::string& queue);

 private:
  std::shared_ptr<const Pool> cached(const std::string& name, const std::optional<std::string>& version);
  std::uint64_t turn_of(const std::string& name);
  bool current(const std::string& version);  // whether the cache is of this pools' version

  PoolStore& store_;
  std::mutex mutex_;
  std::string version_;  // of the cached definitions ("" : none read yet)
  std::map<std::string, std::shared_ptr<const Pool>> cache_;  // nullptr: no such pool at version_
  std::map<std::string, std::uint64_t> turns_;               // round-robin: where the pool's next FETCH starts (this broker's)
};

}  // namespace ojs::broker::pools
