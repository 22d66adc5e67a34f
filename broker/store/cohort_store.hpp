// What the cohort controller reads and writes: each queue's cohort settings and
// GPU budget, the pass epoch, and the share a member may hold now (cohort_share.lua).
// The fields live in the queue's config hash (keys.hpp config): the admin's
// (cohort, cohort_borrowing_limit, cohort_lending_limit) written by queue_config.lua,
// the controller's (cohort_max_gpus, cohort_epoch) by cohort_share.lua.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "broker/store/job_store.hpp"
#include "broker/store/redis_client.hpp"

namespace ojs::broker {

struct CohortSettings {
  std::string queue;
  std::string cohort;  // "" : not in a cohort
  std::optional<long long> borrowing_limit, lending_limit;
  BudgetUse budget;    // nominal_gpus, the share in force (cohort_gpus), the ledger
};

class CohortStore {
 public:
  explicit CohortStore(RedisPool& redis) : redis_(redis) {}
  // Every named queue's settings, in one pipeline.
  std::vector<CohortSettings> read(const std::vector<std::string>& queues);
  // A new pass's epoch (INCR of keys.hpp cohort_epoch).
  long long next_epoch();
  // Sets (or with none removes) the queue's share; false when a newer epoch wrote it.
  bool set_share(const std::string& queue, long long epoch, std::optional<long long> share);

 private:
  RedisPool& redis_;
};

}  // namespace ojs::broker
