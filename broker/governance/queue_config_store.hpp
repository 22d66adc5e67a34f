// Where queue governance lives in Redis, next to the queue's other keys (one hash
// tag, one Cluster slot):
//   ojs:{q}:config         hash: max_total_gpus, max_concurrent_gpu_jobs (plain integers,
//                          read by claim.lua), ml_defaults, ml_limits, tenant_quotas (JSON),
//                          version, updated_at; rate_limit (JSON) with rate_concurrency,
//                          rate_limit_starts, rate_period_ms (integers read by claim.lua);
//                          policy (absent = priority) and fair_tenants (JSON) read by claim.lua,
//                          tenant_fairness (JSON as the admin sent it)
//   ojs:{q}:rate-window    zset: job starts of the last rate period (claim.lua)
//   ojs:{q}:tenant-quotas  hash: tenant -> max GPUs ('*' = default), read by claim.lua
//   ojs:{q}:ledger         hash: gpus, gpu_jobs charged by claim, released by ack/fail/cancel
//   ojs:{q}:tenant-ledger  hash: tenant -> GPUs charged
// Every broker reads the configuration at each PUSH (one HMGET), so a write is
// effective everywhere at once.
#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "broker/governance/queue_config.hpp"
#include "broker/store/redis_client.hpp"

namespace ojs::broker::governance {

struct Reconciliation {
  struct TenantRow {
    std::string tenant;
    long long ledger = 0, actual = 0;
  };
  long long ledger_gpus = 0, ledger_jobs = 0;   // what the ledger says
  long long actual_gpus = 0, actual_jobs = 0;   // sum of charged_gpus over active jobs
  std::vector<TenantRow> tenants;
  bool repaired = false;

  bool drift() const;
  nlohmann::json to_json(const std::string& queue) const;
};

class QueueConfigStore {
 public:
  explicit QueueConfigStore(RedisPool& redis) : redis_(redis) {}

  QueueConfig load(const std::string& queue);
  // Replaces the configuration; with expected_version, only if it is still that
  // version (else OjsError conflict naming the current one). Returns the new version.
  long long save(const std::string& queue, const QueueConfig& config, std::optional<long long> expected_version);
  // Limits and what is in use: {queue, limits{}, in_use{gpus, gpu_jobs}, tenants{name: {max_gpus?, gpus_in_use}}}
  nlohmann::json budget(const std::string& queue);
  // Ledger vs active jobs, in one atomic snapshot (reconcile.lua); repair rewrites the ledger.
  Reconciliation reconcile(const std::string& queue, bool repair);

 private:
  RedisPool& redis_;
};

}  // namespace ojs::broker::governance
