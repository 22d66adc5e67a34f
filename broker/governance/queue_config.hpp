// A queue's governance configuration (admin PUT /ojs/v1/admin/queues/{name}/config):
// ml_defaults fill unset ext_ml_* attributes at PUSH, ml_limits reject at PUSH
// (422), budgets and tenant quotas make jobs wait at FETCH (never reject).
// Published as schema/queue-config.schema.json, which checks every request.
#pragma once
#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "broker/store/priority_score.hpp"
#include "broker/store/queue_config_hash.hpp"

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

// A queue's GPU budget. max_total_gpus counts devices: a whole GPU, a MIG slice and an
// MPS share each count one. max_total_gpu_memory_gb counts the GPU memory the running
// jobs hold (a whole GPU: all of its memory; a MIG slice: its own; an MPS share: what
// the job declared, else the device's fair share), so slices and shares are charged
// for what they are. Either, both or neither may be set. max_total_tpu_chips counts
// the TPU chips the running TPU jobs hold (ext_ml_tpu_chip_count); it binds TPU
// jobs only, as the GPU limits bind GPU jobs only.
struct Budgets {
  std::optional<long long> max_concurrent_gpu_jobs;
  std::optional<long long> max_total_gpus;
  std::optional<double> max_total_gpu_memory_gb;
  std::optional<long long> max_total_tpu_chips;
  // Queues naming the same cohort share their idle GPU budget: max_total_gpus is
  // the queue's guaranteed (nominal) share; it may take up to borrowing_limit GPUs
  // more from the members' idle shares, and lends at most lending_limit of its own
  // (unset: no bound). A lender gets its share back by preemption of the borrowers
  // (docs/operations.md "Cohorts"). A cohort member must set max_total_gpus.
  std::string cohort;
  std::optional<long long> borrowing_limit;
  std::optional<long long> lending_limit;
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
  // The partition it is inspected by (GET /ojs/v1/rate-limits/{key}): a job's
  // rate_limit.key, or an admin's; "": the queue's own name.
  std::string key;
  std::optional<long long> concurrency;
  std::optional<long long> rate_limit;
  std::int64_t rate_period_ms = 0;
  std::string rate_period;  // the ISO 8601 duration as the admin sent it
  bool empty() const { return !concurrency && !rate_limit; }
};

// Per-tenant weights for the `fair` policy (ojs-fair-scheduling.md §9.2
// shape: weights by tenant, default_weight for the others). Each named tenant gets a
// slot (1.., in name order) that PUSH puts into the job's score, so claim.lua finds
// each tenant's oldest job with one range query; unnamed tenants share slot 0.
struct TenantFairness {
  std::map<std::string, double> weights;  // tenant -> weight > 0
  double default_weight = 1;
  // Past use counts half after this long (config field usage_half_life_ms,
  // read by _lib_accounting.lua, whose USAGE_HALF_LIFE_MS is the default: unset here).
  std::optional<double> half_life_seconds;
  FairOrder order = FairOrder::tenant;  // field `order`: "tenant" | "class" (fair_tenants' order)
  bool empty() const { return weights.empty() && default_weight == 1 && !half_life_seconds && order == FairOrder::tenant; }
  int slot_of(const std::string& tenant) const;  // 0 for a tenant without a weight
};

// EASY backfill (docs/matching.md#backfill): a GPU job that has waited
// `after_s` and fits no worker now gets a reservation on the worker whose running
// jobs declare to end soonest, if that is within `max_start_s`.
struct BackfillSettings {
  bool enabled = false;
  long long after_s = 60;
  long long max_start_s = 86400;
};

// How long finished jobs stay listable (ojs-admin-api.md §6.6 `retention`):
// an ISO 8601 duration per terminal state (completed, discarded, cancelled) and, ours,
// max_jobs per state; what is unset takes the broker's --finished-retention-ms and
// --finished-max-jobs. Only the finished index is bounded: the jobs stay readable.
struct Retention {
  std::map<std::string, std::string> age;            // state -> the duration as sent
  std::map<std::string, std::int64_t> age_ms;        // state -> the same in ms
  std::optional<long long> max_jobs;
  bool empty() const { return age.empty() && !max_jobs; }
};
Retention parse_retention(const nlohmann::json& body);  // schema-valid; 400 naming retention.<state>
nlohmann::json retention_to_json(const Retention& retention);
// ojs-backpressure.md §6: a bound on the queue's depth (available +
// scheduled + retryable jobs), checked by push.lua in the same step as the write.
// `reject` answers 429 QUEUE_FULL; `block` holds the PUSH up to its OJS-Block-Timeout
// header for room, then answers the same 429.
struct Backpressure {
  std::optional<long long> max_depth;  // none (or 0): unbounded
  std::string strategy = "reject";     // reject | block
  double warning_threshold = 0.8;      // kept and returned; no warning events yet
  bool empty() const { return !max_depth && strategy == "reject" && warning_threshold == 0.8; }
};

struct QueueConfig {
  nlohmann::json ml_defaults = nlohmann::json::object();  // ext_ml_* -> value
  MlLimits ml_limits;
  Budgets budgets;
  TenantQuotas tenant_quotas;
  QueueRateLimit rate_limit;
  QueuePolicy policy = QueuePolicy::priority;  // how claim orders the ready sets
  TenantFairness tenant_fairness;
  BackfillSettings backfill;
  Retention retention;
  Backpressure backpressure;
  long long version = 0;          // increments on every write; 0: never configured
  std::string updated_at;         // RFC 3339, empty when never configured
};

// Validates an admin's body against schema/queue-config.schema.json, then the
// rules a schema cannot state; throws OjsError invalid_request (400) naming the
// field, the rule and the JSON pointer, e.g. "ml_limits.max_gpu_count",
// "/ml_limits/max_gpu_count". Unknown members are refused (typos must not
// silently configure nothing). `version`, `expected_version`, `updated_at`,
// `queue` are checked by the schema and otherwise ignored.
// The spec's form (ojs-admin-api.md §6.6) is accepted too: top-level `concurrency` is
// rate_limit.concurrency, rate_limit {limit, period} is rate_limit.rate.
QueueConfig parse_queue_config(const nlohmann::json& body);
nlohmann::json to_json(const QueueConfig& config, const std::string& queue);

// One row per member of the configuration: the one place that says how a member
// is read from a request, answered, stored in the queue's config hash and read
// back. The schema states the member's rules (they are not repeated in `parse`).
// Adding a member: its property in schema/queue-config.schema.json, its
// QueueConfig member, and a row in queue_config.cpp (docs/architecture.md).
struct QueueConfigField {
  const char* name;                                               // the JSON member
  void (*parse)(const nlohmann::json& value, QueueConfig& into);  // a schema-valid value (or the stored one)
  nlohmann::json (*render)(const QueueConfig& config);            // the member in the answer
  // The config hash fields the member is kept in: all removed by every write. A
  // row without `store`/`load` keeps its rendered JSON under `name`, unless it
  // renders as {} or false. A row without `render` is an alias of another member
  // (it sets that member): neither answered by to_json nor stored.
  std::vector<std::string> hash_fields;
  void (*store)(const QueueConfig& config, QueueConfigWrite& write) = nullptr;
  void (*load)(const StoredQueueConfig& stored, QueueConfig& into) = nullptr;
};
const std::vector<QueueConfigField>& queue_config_fields();

// The config hash fields of every row, what a write replaces and a read asks for.
std::vector<std::string> queue_config_hash_fields();
QueueConfigWrite to_stored(const QueueConfig& config);
QueueConfig from_stored(const StoredQueueConfig& stored);

// The rate limit alone (PUT /admin/queues/{q}/rate-limit): the schema's
// rate_limit property; `prefix` ("rate_limit." or "") is put before the field names.
QueueRateLimit parse_rate_limit(const nlohmann::json& body, const std::string& prefix);
// A rate limit's key checked by the schema's rule (rate_limit.key), wherever it is sent:
// 400 naming `field` when it breaks it.
void check_rate_limit_key(const nlohmann::json& key, const std::string& field);

// to_json plus the spec's places (ojs-admin-api.md §6.6) beside ours: top-level
// `concurrency`, rate_limit {limit, period} (the admin queue detail's `configuration`).
nlohmann::json admin_configuration(const QueueConfig& config, const std::string& queue);
nlohmann::json rate_limit_to_json(const QueueRateLimit& limit);

// "fifo" | "priority" | "sjf" | "fair" <-> QueuePolicy.
std::optional<QueuePolicy> parse_policy(const std::string& name);
const char* policy_name(QueuePolicy policy);
// What claim.lua reads (config hash field fair_tenants): the band base, the default
// weight and tenant -> [slot, weight].
nlohmann::json fairness_for_claim(const TenantFairness& fairness);

// The stored form: false, or {"after_s": .., "max_start_s": ..}.
BackfillSettings parse_backfill(const nlohmann::json& stored);

// {"max_depth": 0.., "strategy": "reject"|"block", "warning_threshold": 0..1}.
Backpressure parse_backpressure(const nlohmann::json& body);  // schema-valid; drop_oldest: 422 unsupported
nlohmann::json backpressure_to_json(const Backpressure& backpressure);

// Tenant names: 1-64 of [A-Za-z0-9._-].
bool is_valid_tenant(const std::string& tenant);

}  // namespace ojs::broker::governance
