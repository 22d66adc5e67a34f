// Worker pools in Redis (ojs-fair-scheduling.md §6): their definitions (JSON text;
// broker/pools parses it) in one global hash, a version every write bumps, and the
// per-queue reads a pool's FETCH and the scheduling stats make in one round trip.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "broker/store/redis_client.hpp"

namespace ojs::broker {

class PoolStore {
 public:
  explicit PoolStore(RedisPool& redis) : redis_(redis) {}

  enum class Put { created, updated };
  Put put(const std::string& name, const std::string& json);
  std::optional<std::string> get(const std::string& name);
  std::map<std::string, std::string> all();  // name -> JSON
  std::size_t count();
  bool remove(const std::string& name);  // false when it was not there
  std::string version();                 // "0" before the first write

  // What one round trip reads of `queues`, each part only when asked for.
  struct QueueReadRequest {
    std::int64_t minute = 0;         // since the epoch: the rollup's current bucket
    bool dispatched = false;         // the rollup's m<minute>:dispatched and m<minute-1>:dispatched
    bool active = false;             // the active index's size
    std::vector<std::vector<std::string>> ready_classes;  // per queue, the classes whose ready sets to count (empty: none)
  };
  struct QueueRead {
    std::string version;  // the pools' version, read first in the same round trip
    std::vector<long long> dispatched_now, dispatched_before, active, backlog;  // per queue (0 where not asked)
  };
  QueueRead read_queues(const std::vector<std::string>& queues, const QueueReadRequest& what);

 private:
  RedisPool& redis_;
};

}  // namespace ojs::broker
