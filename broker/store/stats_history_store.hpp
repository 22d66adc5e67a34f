// The per-minute rollup behind the stats history and throughput
// (ojs-admin-api.md §10.1, §10.2): fields m<minute since the epoch>:processed and
// m<minute>:failed of each queue's stats hash, counted by the scripts that end an
// attempt (_lib.lua count_minute: an ACK is processed, a NACK that retries or
// discards failed), in the same step as the transition; a day of them is kept (trim).
// The claims count m<minute>:dispatched there too (PoolStore reads them).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "broker/store/redis_client.hpp"

namespace ojs::broker {

struct MinuteCounts {
  std::int64_t minute = 0;  // since the epoch
  long long processed = 0;
  long long failed = 0;
};

class StatsHistoryStore {
 public:
  explicit StatsHistoryStore(RedisPool& redis) : redis_(redis) {}
  // Every minute in [from_minute, to_minute], summed over `queues` (zero where nothing was counted).
  std::vector<MinuteCounts> range(const std::vector<std::string>& queues, std::int64_t from_minute, std::int64_t to_minute);
  // Drops the rollup fields of the minutes before `before_minute`; returns how many.
  long long trim(const std::string& queue, std::int64_t before_minute);
  static constexpr std::int64_t kKeepMinutes = 24 * 60;  // the spec's SHOULD: 24 hours of 1-minute data

 private:
  RedisPool& redis_;
};

}  // namespace ojs::broker
