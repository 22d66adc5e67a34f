#include "broker/governance/queue_configs.hpp"

#include "ojs/core/error.hpp"
#include "ojs/core/time.hpp"
#include "ojs/ml/device_assignment.hpp"

namespace ojs::broker::governance {

using nlohmann::json;

json to_json(const Reconciliation& r, const std::string& queue) {
  json rows = json::array();
  for (const auto& t : r.tenants) rows.push_back({{"tenant", t.tenant}, {"ledger_gpus", t.ledger}, {"active_gpus", t.actual}});
  return {{"queue", queue},
          {"ledger", {{"gpus", r.ledger_gpus}, {"gpu_jobs", r.ledger_jobs}, {"gpu_memory_gb", ml::gpu_memory_gb(r.ledger_gpu_mem_mb)},
                      {"tpu_chips", r.ledger_tpu_chips}}},
          {"active", {{"gpus", r.actual_gpus}, {"gpu_jobs", r.actual_jobs}, {"gpu_memory_gb", ml::gpu_memory_gb(r.actual_gpu_mem_mb)},
                      {"tpu_chips", r.actual_tpu_chips}}},
          {"drift", {{"gpus", r.ledger_gpus - r.actual_gpus},
                     {"gpu_jobs", r.ledger_jobs - r.actual_jobs},
                     {"gpu_memory_gb", ml::gpu_memory_gb(r.ledger_gpu_mem_mb - r.actual_gpu_mem_mb)},
                     {"tpu_chips", r.ledger_tpu_chips - r.actual_tpu_chips}}},
          {"tenants", rows},
          {"consistent", !r.drift()},
          {"repaired", r.repaired}};
}

std::shared_ptr<const QueueConfig> QueueConfigs::cached(const std::string& queue) {
  {
    std::lock_guard lock(cache_mutex_);
    auto it = cache_.find(queue);
    if (it != cache_.end()) return it->second;
  }
  return fresh(queue);
}

std::shared_ptr<const QueueConfig> QueueConfigs::fresh(const std::string& queue) {
  static const auto fields = queue_config_hash_fields();
  auto shared = std::make_shared<const QueueConfig>(from_stored(store_.load(queue, fields)));
  std::lock_guard lock(cache_mutex_);
  if (cache_.size() >= kMaxCached && !cache_.count(queue)) cache_.clear();
  return cache_[queue] = std::move(shared);
}

long long QueueConfigs::save(const std::string& queue, const QueueConfig& c, std::optional<long long> expected_version) {
  const auto w = to_stored(c);
  {
    std::lock_guard lock(cache_mutex_);
    cache_.erase(queue);
  }
  const auto saved = store_.save(queue, w, expected_version);
  if (saved.conflict)
    throw OjsError(ErrorCode::conflict,
                   "queue " + queue + " configuration is at version " + std::to_string(saved.version) + ", not " +
                       std::to_string(expected_version.value_or(0)) + "; re-read it and retry",
                   {{"queue", queue}, {"current_version", saved.version}, {"expected_version", expected_version.value_or(0)}});
  return saved.version;
}

json budget_limits_json(const BudgetUse& use) {
  json limits = json::object();
  if (use.nominal_gpus && *use.nominal_gpus >= 0) limits["max_total_gpus"] = *use.nominal_gpus;  // a cohort's share: cohort_json
  if (use.max_jobs && *use.max_jobs >= 0) limits["max_concurrent_gpu_jobs"] = *use.max_jobs;
  if (use.max_gpu_mem_mb && *use.max_gpu_mem_mb >= 0) limits["max_total_gpu_memory_gb"] = ml::gpu_memory_gb(*use.max_gpu_mem_mb);
  if (use.max_tpu_chips && *use.max_tpu_chips >= 0) limits["max_total_tpu_chips"] = *use.max_tpu_chips;
  return limits;
}

json cohort_json(const BudgetUse& use) {
  if (use.cohort.empty() || !use.nominal_gpus) return nullptr;
  const long long nominal = *use.nominal_gpus, share = use.max_gpus.value_or(nominal);
  return {{"name", use.cohort},
          {"nominal_gpus", nominal},
          {"share_gpus", share},
          {"lent_gpus", std::max(0LL, nominal - share)},
          {"borrowed_gpus", use.borrowed_gpus}};
}

json QueueConfigs::budget(const std::string& queue) {
  const auto b = store_.budget(queue);
  const auto& quotas = b.tenant_max_gpus;
  json tenants = json::object();
  for (const auto& [tenant, max] : quotas)
    if (tenant != "*") tenants[tenant]["max_gpus"] = max;
  for (const auto& [tenant, gpus] : b.tenant_gpus_in_use) {
    tenants[tenant]["gpus_in_use"] = gpus;
    if (!tenants[tenant].contains("max_gpus") && quotas.count("*")) tenants[tenant]["max_gpus"] = quotas.at("*");
  }
  for (auto& [tenant, entry] : tenants.items())
    if (!entry.contains("gpus_in_use")) entry["gpus_in_use"] = 0;
  json out = {{"queue", queue},
              {"limits", budget_limits_json(b.use)},
              {"in_use", {{"gpus", b.use.gpus_in_use}, {"gpu_jobs", b.use.gpu_jobs}, {"gpu_memory_gb", ml::gpu_memory_gb(b.use.gpu_mem_mb_in_use)},
                          {"tpu_chips", b.use.tpu_chips_in_use}}},
              {"tenants", tenants}};
  if (quotas.count("*")) out["default_tenant_max_gpus"] = quotas.at("*");
  if (const auto cohort = cohort_json(b.use); !cohort.is_null()) out["cohort"] = cohort;
  return out;
}

}  // namespace ojs::broker::governance
