// A queue's governance configuration (admin PUT /ojs/v1/admin/queues/{name}/config):
// ml_defaults fill unset ext_ml_* attributes at PUSH, ml_limits reject at PUSH
// (422), budgets and tenant quotas make jobs wait at FETCH (never reject).
// Published as schema/queue-config.schema.json.
#pragma once
#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ojs::broker::governance {

struct MlLimits {
  std::optional<long long> max_gpu_count;
  std::optional<double> max_gpu_memory_gb;
  std::optional<double> max_memory_gb;
  std::optional<long long> max_timeout_seconds;
  std::vector<std::string> allowed_gpu_types;         // empty: any
  std::vector<std::string> allowed_priority_classes;  // empty: any
  bool empty() const;
};

struct Budgets {
  std::optional<long long> max_concurrent_gpu_jobs;
  std::optional<long long> max_total_gpus;
};

struct TenantQuotas {
  std::optional<long long> default_max_gpus;   // a tenant without an entry
  std::map<std::string, long long> max_gpus;   // tenant -> GPUs it may hold at once
  bool empty() const { return !default_max_gpus && max_gpus.empty(); }
};

// Queue-level rate limit (ojs-rate-limiting.md §7.2), enforced by claim.lua at
// FETCH: at most `concurrency` active jobs, at most `rate_limit` starts in any
// sliding window of `rate_period_ms`. Jobs over the limit stay available.
struct QueueRateLimit {
  std::optional<long long> concurrency;
  std::optional<long long> rate_limit;
  std::int64_t rate_period_ms = 0;
  std::string rate_period;  // the ISO 8601 duration as the admin sent it
  bool empty() const { return !concurrency && !rate_limit; }
};

struct QueueConfig {
  nlohmann::json ml_defaults = nlohmann::json::object();  // ext_ml_* -> value
  MlLimits ml_limits;
  Budgets budgets;
  TenantQuotas tenant_quotas;
  QueueRateLimit rate_limit;
  long long version = 0;          // increments on every write; 0: never configured
  std::string updated_at;         // RFC 3339, empty when never configured
};

// Validates an admin's body; throws OjsError invalid_request (400) naming the field,
// e.g. "ml_limits.max_gpu_count". Unknown top-level members are refused (typos must
// not silently configure nothing). `version`, `expected_version`, `updated_at` are ignored.
QueueConfig parse_queue_config(const nlohmann::json& body);

nlohmann::json limits_to_json(const MlLimits& limits);
MlLimits limits_from_json(const nlohmann::json& stored);     // trusted (already validated) form
nlohmann::json quotas_to_json(const TenantQuotas& quotas);
TenantQuotas quotas_from_json(const nlohmann::json& stored);
nlohmann::json to_json(const QueueConfig& config, const std::string& queue);
QueueRateLimit parse_rate_limit(const nlohmann::json& body, const std::string& prefix);  // "rate_limit." or ""
nlohmann::json rate_limit_to_json(const QueueRateLimit& limit);

// Tenant names: 1-64 of [A-Za-z0-9._-].
bool is_valid_tenant(const std::string& tenant);

}  // namespace ojs::broker::governance
