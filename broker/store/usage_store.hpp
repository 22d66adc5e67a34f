// Reads of the resource accounting the scripts keep (_lib_accounting.lua):
// each queue's totals (tenant, resource -> resource-microseconds since
// the queue was first used, never decayed) and its per-hour rollup (hour, tenant,
// job type, worker, resource -> resource-microseconds). The transition that ends a
// running attempt leaves its usage line in its event; settling (settle.hpp) journals
// and folds it before each read here and in the maintenance pass, which also trims
// the rollup to its retention.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "broker/store/redis_client.hpp"

namespace ojs::broker {

struct UsageTotal {
  std::string queue, tenant, resource;  // tenant "": jobs without one
  long long microseconds = 0;           // resource-microseconds (usage_resources.hpp)
};

struct UsageHour {
  std::int64_t hour = 0;  // since the epoch
  std::string queue, tenant, type, worker, resource;
  long long microseconds = 0;
};

class UsageStore {
 public:
  explicit UsageStore(RedisPool& redis) : redis_(redis) {}
  // Settles each queue (settle.hpp): its ends journaled and the journal folded.
  void settle(const std::vector<std::string>& queues);
  std::vector<UsageTotal> totals(const std::vector<std::string>& queues);
  // The rollup rows of `queues` for the hours in [from_hour, to_hour].
  std::vector<UsageHour> hours(const std::vector<std::string>& queues, std::int64_t from_hour, std::int64_t to_hour);
  // Drops the rollup rows of the hours before `before_hour`; returns how many.
  long long trim(const std::string& queue, std::int64_t before_hour);

 private:
  RedisPool& redis_;
};

}  // namespace ojs::broker
