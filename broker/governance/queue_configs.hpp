// Queue governance over the store: QueueConfig to and from the fields
// QueueConfigStore keeps (broker/store/queue_config_store.hpp), the budget as the
// admin API shows it. Every broker reads the configuration at each PUSH (one
// HMGET), so a write is effective everywhere at once.
#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "broker/governance/queue_config.hpp"
#include "broker/store/queue_config_store.hpp"

namespace ojs::broker::governance {

class QueueConfigs {
 public:
  explicit QueueConfigs(QueueConfigStore& store) : store_(store) {}

  QueueConfig load(const std::string& queue);
  // Replaces the configuration; with expected_version, only if it is still that
  // version (else OjsError conflict naming the current one). Returns the new version.
  long long save(const std::string& queue, const QueueConfig& config, std::optional<long long> expected_version);
  // Limits and what is in use: {queue, limits{}, in_use{gpus, gpu_jobs}, tenants{name: {max_gpus?, gpus_in_use}}}
  nlohmann::json budget(const std::string& queue);
  Reconciliation reconcile(const std::string& queue, bool repair) { return store_.reconcile(queue, repair); }

 private:
  QueueConfigStore& store_;
};

nlohmann::json to_json(const Reconciliation& r, const std::string& queue);

}  // namespace ojs::broker::governance
