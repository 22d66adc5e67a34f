// Queue governance in Redis: the config hash and the tenant quota hash (written
// together by queue_config.lua), read back as text, and the reads of the ledgers
// they limit. The fields and keys are listed once, in docs/architecture.md
// ("Redis keys") and keys.hpp; claim.lua reads the integer fields. Which fields
// there are and what they mean is governance's (the field table in
// governance/queue_config.hpp).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "broker/store/job_store.hpp"
#include "broker/store/queue_config_hash.hpp"
#include "broker/store/redis_client.hpp"

namespace ojs::broker {

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
  long long ledger_gpu_mem_mb = 0, actual_gpu_mem_mb = 0;  // the same for charged_gpu_mem_mb
  long long ledger_tpu_chips = 0, actual_tpu_chips = 0;    // the same for charged_tpu_chips
  std::vector<TenantRow> tenants;
  bool repaired = false;

  bool drift() const;
};

class QueueConfigStore {
 public:
  explicit QueueConfigStore(RedisPool& redis) : redis_(redis) {}

  // The version, updated_at and the given fields of the config hash (one HMGET).
  StoredQueueConfig load(const std::string& queue, const std::vector<std::string>& fields);
  // queue_config.lua: compare-and-set on the version (expected_version nullopt = any).
  QueueConfigSaved save(const std::string& queue, const QueueConfigWrite& config, std::optional<long long> expected_version);
  BudgetWithTenants budget(const std::string& queue);
  // Ledger vs active jobs, in one atomic snapshot (reconcile.lua); repair rewrites the ledger.
  Reconciliation reconcile(const std::string& queue, bool repair);

 private:
  RedisPool& redis_;
};

}  // namespace ojs::broker
