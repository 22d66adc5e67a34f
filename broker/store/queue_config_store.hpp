// Queue governance in Redis: the config hash and the tenant quota hash (written
// together by queue_config.lua), read back as text, and the reads of the ledgers
// they limit. The fields and keys are listed once, in docs/architecture.md
// ("Redis keys") and keys.hpp; claim.lua reads the integer fields. What the fields
// mean (parsing, validation, the QueueConfig type) is governance's
// (governance/queue_configs.hpp).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "broker/store/job_store.hpp"
#include "broker/store/redis_client.hpp"

namespace ojs::broker {

// The config hash as stored. JSON members are text, "" when absent.
struct StoredQueueConfig {
  long long version = 0;  // 0: never configured
  std::optional<std::int64_t> updated_at_ms;
  std::optional<long long> max_total_gpus, max_concurrent_gpu_jobs;
  std::string ml_defaults, ml_limits, tenant_quotas, rate_limit, tenant_fairness;
  std::string policy;    // "" = priority
  std::string backfill;  // [backfill] JSON, "" = off
};

// A whole configuration to write: every field present here replaces the stored
// one, every governance field absent is removed (queue_config.lua).
struct QueueConfigWrite {
  std::optional<long long> max_total_gpus, max_concurrent_gpu_jobs;
  std::string ml_defaults, ml_limits, tenant_quotas, rate_limit, tenant_fairness;  // JSON text, "" = none
  // claim.lua's integer form of the rate limit (rate_period_ms only with rate_limit_starts).
  std::optional<long long> rate_concurrency, rate_limit_starts, rate_period_ms;
  std::string policy;        // "" = priority
  std::string fair_tenants;  // claim.lua's form of the weights, "" = none
  std::string backfill;      // [backfill] JSON (read by the preemption controller's backfill pass), "" = off
  std::vector<std::pair<std::string, long long>> tenant_max_gpus;  // the tenant quota hash ('*' = default)
};

struct QueueConfigSaved {
  bool conflict = false;  // expected version was not the current one
  long long version = 0;  // the new version, or the current one on conflict
};

// The budget read plus the tenant quotas and what each tenant is charged.
struct BudgetWithTenants {
  BudgetUse use;
  std::map<std::string, long long> tenant_max_gpus;    // '*' = default
  std::map<std::string, long long> tenant_gpus_in_use;
};

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
};

class QueueConfigStore {
 public:
  explicit QueueConfigStore(RedisPool& redis) : redis_(redis) {}

  StoredQueueConfig load(const std::string& queue);
  // queue_config.lua: compare-and-set on the version (expected_version nullopt = any).
  QueueConfigSaved save(const std::string& queue, const QueueConfigWrite& config, std::optional<long long> expected_version);
  BudgetWithTenants budget(const std::string& queue);
  // Ledger vs active jobs, in one atomic snapshot (reconcile.lua); repair rewrites the ledger.
  Reconciliation reconcile(const std::string& queue, bool repair);

 private:
  RedisPool& redis_;
};

}  // namespace ojs::broker
