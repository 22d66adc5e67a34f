#include "broker/governance/queue_configs.hpp"

#include "ojs/core/error.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker::governance {

using nlohmann::json;

namespace {

json json_of(const std::string& text) {
  if (text.empty()) return json::object();
  auto parsed = json::parse(text, nullptr, false);
  return parsed.is_discarded() ? json::object() : parsed;
}

}  // namespace

json to_json(const Reconciliation& r, const std::string& queue) {
  json rows = json::array();
  for (const auto& t : r.tenants) rows.push_back({{"tenant", t.tenant}, {"ledger_gpus", t.ledger}, {"active_gpus", t.actual}});
  return {{"queue", queue},
          {"ledger", {{"gpus", r.ledger_gpus}, {"gpu_jobs", r.ledger_jobs}}},
          {"active", {{"gpus", r.actual_gpus}, {"gpu_jobs", r.actual_jobs}}},
          {"drift", {{"gpus", r.ledger_gpus - r.actual_gpus}, {"gpu_jobs", r.ledger_jobs - r.actual_jobs}}},
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
  const auto s = store_.load(queue);
  QueueConfig c;
  c.version = s.version;
  if (s.updated_at_ms) c.updated_at = format_rfc3339(*s.updated_at_ms);
  c.budgets.max_total_gpus = s.max_total_gpus;
  c.budgets.max_concurrent_gpu_jobs = s.max_concurrent_gpu_jobs;
  c.ml_defaults = json_of(s.ml_defaults);
  c.ml_limits = limits_from_json(json_of(s.ml_limits));
  c.tenant_quotas = quotas_from_json(json_of(s.tenant_quotas));
  c.rate_limit = parse_rate_limit(json_of(s.rate_limit), "rate_limit.");
  if (!s.policy.empty()) c.policy = parse_policy(s.policy).value_or(QueuePolicy::priority);
  c.tenant_fairness = fairness_from_json(json_of(s.tenant_fairness));
  if (!s.backfill.empty()) c.backfill = parse_backfill(json_of(s.backfill));  // [backfill]
  auto shared = std::make_shared<const QueueConfig>(std::move(c));
  std::lock_guard lock(cache_mutex_);
  if (cache_.size() >= kMaxCached && !cache_.count(queue)) cache_.clear();
  return cache_[queue] = std::move(shared);
}

long long QueueConfigs::save(const std::string& queue, const QueueConfig& c, std::optional<long long> expected_version) {
  QueueConfigWrite w;
  w.max_total_gpus = c.budgets.max_total_gpus;
  w.max_concurrent_gpu_jobs = c.budgets.max_concurrent_gpu_jobs;
  if (!c.ml_defaults.empty()) w.ml_defaults = c.ml_defaults.dump();
  if (!c.ml_limits.empty()) w.ml_limits = limits_to_json(c.ml_limits).dump();
  if (!c.tenant_quotas.empty()) w.tenant_quotas = quotas_to_json(c.tenant_quotas).dump();
  // The rate limit as JSON (read back) and as plain integers (read by claim.lua).
  if (!c.rate_limit.empty()) w.rate_limit = rate_limit_to_json(c.rate_limit).dump();
  w.rate_concurrency = c.rate_limit.concurrency;
  if (c.rate_limit.rate_limit) {
    w.rate_limit_starts = c.rate_limit.rate_limit;
    w.rate_period_ms = c.rate_limit.rate_period_ms;
  }
  // [fairshare] The policy (read by claim.lua), the weights as sent, and their claim form.
  if (c.policy != QueuePolicy::priority) w.policy = policy_name(c.policy);
  if (!c.tenant_fairness.empty()) w.tenant_fairness = fairness_to_json(c.tenant_fairness).dump();
  if (c.policy == QueuePolicy::fair) w.fair_tenants = fairness_for_claim(c.tenant_fairness).dump();
  if (c.backfill.enabled) w.backfill = backfill_to_json(c.backfill).dump();  // [backfill]
  if (c.tenant_quotas.default_max_gpus) w.tenant_max_gpus.emplace_back("*", *c.tenant_quotas.default_max_gpus);
  for (const auto& [tenant, max] : c.tenant_quotas.max_gpus) w.tenant_max_gpus.emplace_back(tenant, max);
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

json QueueConfigs::budget(const std::string& queue) {
  const auto b = store_.budget(queue);
  json limits = json::object();
  if (b.use.max_gpus) limits["max_total_gpus"] = *b.use.max_gpus;
  if (b.use.max_jobs) limits["max_concurrent_gpu_jobs"] = *b.use.max_jobs;
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
              {"limits", limits},
              {"in_use", {{"gpus", b.use.gpus_in_use}, {"gpu_jobs", b.use.gpu_jobs}}},
              {"tenants", tenants}};
  if (quotas.count("*")) out["default_tenant_max_gpus"] = quotas.at("*");
  return out;
}

}  // namespace ojs::broker::governance
