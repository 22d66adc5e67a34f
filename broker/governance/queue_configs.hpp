// Queue governance over the store: QueueConfig to and from the fields
// QueueConfigStore keeps (broker/store/queue_config_store.hpp), the budget as the
// admin API shows it. PUSH reads the configuration from this broker's cache and
// push.lua checks that its version is still the current one (a write bumps it), so
// a write is effective at the very next PUSH on every broker.
#pragma once
#include <nlohmann/json.hpp>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "broker/governance/queue_config.hpp"
#include "broker/store/queue_config_store.hpp"

namespace ojs::broker::governance {

// A queue budget's configured limits as the budget view and the overview show them:
// {max_total_gpus?, max_concurrent_gpu_jobs?, max_total_gpu_memory_gb?}.
nlohmann::json budget_limits_json(const BudgetUse& use);
// A cohort member's place in its cohort {name, nominal_gpus, share_gpus (the share in
// force), lent_gpus, borrowed_gpus}; null outside a cohort.
nlohmann::json cohort_json(const BudgetUse& use);

class QueueConfigs {
 public:
  explicit QueueConfigs(QueueConfigStore& store) : store_(store) {}

  QueueConfig load(const std::string& queue) { return *fresh(queue); }
  // From Redis; it replaces this broker's copy.
  std::shared_ptr<const QueueConfig> fresh(const std::string& queue);
  // This broker's copy (fresh when it has none). Only for a caller whose store call
  // checks the copy's version (push.lua); a stale copy is replaced by fresh().
  std::shared_ptr<const QueueConfig> cached(const std::string& queue);
  // Replaces the configuration; with expected_version, only if it is still that
  // version (else OjsError conflict naming the current one). Returns the new version.
  long long save(const std::string& queue, const QueueConfig& config, std::optional<long long> expected_version);
  // Limits and what is in use: {queue, limits{}, in_use{gpus, gpu_jobs}, tenants{name: {max_gpus?, gpus_in_use}}}
  nlohmann::json budget(const std::string& queue);
  Reconciliation reconcile(const std::string& queue, bool repair) { return store_.reconcile(queue, repair); }

 private:
  static constexpr std::size_t kMaxCached = 4096;  // queues; past it the cache starts over
  QueueConfigStore& store_;
  std::mutex cache_mutex_;
  std::unordered_map<std::string, std::shared_ptr<const QueueConfig>> cache_;
};

nlohmann::json to_json(const Reconciliation& r, const std::string& queue);

}  // namespace ojs::broker::governance
