#include "broker/governance/queue_config.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "broker/governance/queue_config_schema.hpp"
#include "ojs/core/error.hpp"
#include "ojs/core/json_schema.hpp"
#include "ojs/core/time.hpp"
#include "ojs/ml/device_assignment.hpp"
#include "ojs/ml/requirements.hpp"
#include "ojs/ml/types.hpp"

namespace ojs::broker::governance {

using nlohmann::json;

namespace {

// The request's rules: the published schema, compiled into the broker.
const JsonSchema& schema() {
  static const JsonSchema compiled(json::parse(queue_config_schema_text()));
  return compiled;
}

long long integer(const json& v) { return v.get<long long>(); }

std::vector<std::string> lowercase_strings(const json& v) {
  std::vector<std::string> out;
  for (const auto& s : v) out.push_back(ml::lowercase(s.get<std::string>()));
  return out;
}

template <class T>
void put(json& out, const char* name, const std::optional<T>& v) {
  if (v) out[name] = *v;
}

void put(QueueConfigWrite& w, const char* field, std::optional<long long> n) {
  if (n) w.fields.emplace_back(field, std::to_string(*n));
}

std::optional<long long> stored_integer(const StoredQueueConfig& s, const char* field) {
  auto it = s.fields.find(field);
  if (it == s.fields.end()) return std::nullopt;
  try {
    return std::stoll(it->second);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// ml_defaults: the schema says "ext_ml_* members"; the values follow a job's rules.
void parse_defaults(const json& defaults, QueueConfig& c) {
  try {
    (void)ml::parse_requirements(defaults);
  } catch (const OjsError& e) {
    const auto& d = e.details();
    const std::string field = d.is_object() && d.contains("field") ? d["field"].get<std::string>() : std::string("?");
    const std::string rule = d.is_object() && d.contains("rule") ? d["rule"].get<std::string>() : std::string(e.what());
    throw invalid_field("ml_defaults." + field, rule, "/ml_defaults/" + field);
  }
  c.ml_defaults = defaults;
}

void parse_limits(const json& l, QueueConfig& c) {
  MlLimits out;
  if (l.contains("max_gpu_count")) out.max_gpu_count = integer(l["max_gpu_count"]);
  if (l.contains("max_gpu_memory_gb")) out.max_gpu_memory_gb = l["max_gpu_memory_gb"].get<double>();
  if (l.contains("max_memory_gb")) out.max_memory_gb = l["max_memory_gb"].get<double>();
  if (l.contains("max_timeout_seconds")) out.max_timeout_seconds = integer(l["max_timeout_seconds"]);
  if (l.contains("allowed_gpu_types")) out.allowed_gpu_types = lowercase_strings(l["allowed_gpu_types"]);
  if (l.contains("allowed_priority_classes")) out.allowed_priority_classes = lowercase_strings(l["allowed_priority_classes"]);
  c.ml_limits = std::move(out);
}

json render_limits(const QueueConfig& c) {
  const auto& l = c.ml_limits;
  json out = json::object();
  put(out, "max_gpu_count", l.max_gpu_count);
  put(out, "max_gpu_memory_gb", l.max_gpu_memory_gb);
  put(out, "max_memory_gb", l.max_memory_gb);
  put(out, "max_timeout_seconds", l.max_timeout_seconds);
  if (!l.allowed_gpu_types.empty()) out["allowed_gpu_types"] = l.allowed_gpu_types;
  if (!l.allowed_priority_classes.empty()) out["allowed_priority_classes"] = l.allowed_priority_classes;
  return out;
}

// Budgets live as integer fields, which claim.lua reads: GPU memory as whole megabytes
// (decimal, as devices advertise gigabytes) in max_total_gpu_memory_mb.
using ml::gpu_memory_gb;
using ml::gpu_memory_mb;

void parse_budgets(const json& b, QueueConfig& c) {
  c.budgets = {};
  if (b.contains("max_concurrent_gpu_jobs")) c.budgets.max_concurrent_gpu_jobs = integer(b["max_concurrent_gpu_jobs"]);
  if (b.contains("max_total_gpus")) c.budgets.max_total_gpus = integer(b["max_total_gpus"]);
  if (b.contains("max_total_gpu_memory_gb")) c.budgets.max_total_gpu_memory_gb = b["max_total_gpu_memory_gb"].get<double>();
  if (b.contains("max_total_tpu_chips")) c.budgets.max_total_tpu_chips = integer(b["max_total_tpu_chips"]);
  if (b.contains("cohort")) c.budgets.cohort = b["cohort"].get<std::string>();
  if (b.contains("borrowing_limit")) c.budgets.borrowing_limit = integer(b["borrowing_limit"]);
  if (b.contains("lending_limit")) c.budgets.lending_limit = integer(b["lending_limit"]);
  // The cohort's total is the sum of its members' nominal shares: a member without
  // one would lend and borrow against nothing.
  if (!c.budgets.cohort.empty() && !c.budgets.max_total_gpus)
    throw invalid_field("budgets.max_total_gpus", "a queue in a cohort must set max_total_gpus (its nominal share)",
                        "/budgets/max_total_gpus");
  if (c.budgets.cohort.empty() && (c.budgets.borrowing_limit || c.budgets.lending_limit))
    throw invalid_field(c.budgets.borrowing_limit ? "budgets.borrowing_limit" : "budgets.lending_limit",
                        "applies to a queue in a cohort: set budgets.cohort",
                        c.budgets.borrowing_limit ? "/budgets/borrowing_limit" : "/budgets/lending_limit");
}

json render_budgets(const QueueConfig& c) {
  json out = json::object();
  put(out, "max_concurrent_gpu_jobs", c.budgets.max_concurrent_gpu_jobs);
  put(out, "max_total_gpus", c.budgets.max_total_gpus);
  put(out, "max_total_gpu_memory_gb", c.budgets.max_total_gpu_memory_gb);
  put(out, "max_total_tpu_chips", c.budgets.max_total_tpu_chips);
  if (!c.budgets.cohort.empty()) out["cohort"] = c.budgets.cohort;
  put(out, "borrowing_limit", c.budgets.borrowing_limit);
  put(out, "lending_limit", c.budgets.lending_limit);
  return out;
}

void store_budgets(const QueueConfig& c, QueueConfigWrite& w) {
  put(w, "max_total_gpus", c.budgets.max_total_gpus);
  put(w, "max_concurrent_gpu_jobs", c.budgets.max_concurrent_gpu_jobs);
  if (c.budgets.max_total_gpu_memory_gb) put(w, "max_total_gpu_memory_mb", gpu_memory_mb(*c.budgets.max_total_gpu_memory_gb));
  put(w, "max_total_tpu_chips", c.budgets.max_total_tpu_chips);
  if (!c.budgets.cohort.empty()) w.fields.emplace_back("cohort", c.budgets.cohort);
  w.cohort = c.budgets.cohort;
  // Out of a cohort, the share the controller set goes with it (it is not a row's
  // field: the controller keeps it while the queue stays in its cohort).
  if (c.budgets.cohort.empty()) w.replaced.insert(w.replaced.end(), {"cohort_max_gpus", "cohort_epoch"});
  put(w, "cohort_borrowing_limit", c.budgets.borrowing_limit);
  put(w, "cohort_lending_limit", c.budgets.lending_limit);
}

void load_budgets(const StoredQueueConfig& s, QueueConfig& c) {
  c.budgets.max_total_gpus = stored_integer(s, "max_total_gpus");
  c.budgets.max_concurrent_gpu_jobs = stored_integer(s, "max_concurrent_gpu_jobs");
  if (const auto mb = stored_integer(s, "max_total_gpu_memory_mb")) c.budgets.max_total_gpu_memory_gb = gpu_memory_gb(*mb);
  c.budgets.max_total_tpu_chips = stored_integer(s, "max_total_tpu_chips");
  if (auto it = s.fields.find("cohort"); it != s.fields.end()) c.budgets.cohort = it->second;
  c.budgets.borrowing_limit = stored_integer(s, "cohort_borrowing_limit");
  c.budgets.lending_limit = stored_integer(s, "cohort_lending_limit");
}

void parse_quotas(const json& q, QueueConfig& c) {
  TenantQuotas out;
  if (q.contains("default_max_gpus")) out.default_max_gpus = integer(q["default_max_gpus"]);
  if (q.contains("tenants"))
    for (auto it = q["tenants"].begin(); it != q["tenants"].end(); ++it) out.max_gpus[it.key()] = integer(it.value()["max_gpus"]);
  c.tenant_quotas = std::move(out);
}

json render_quotas(const QueueConfig& c) {
  json out = json::object();
  put(out, "default_max_gpus", c.tenant_quotas.default_max_gpus);
  if (!c.tenant_quotas.max_gpus.empty()) {
    out["tenants"] = json::object();
    for (const auto& [tenant, max] : c.tenant_quotas.max_gpus) out["tenants"][tenant] = {{"max_gpus", max}};
  }
  return out;
}

// The quotas as sent (read back) and as the tenant quota hash claim.lua reads.
void store_quotas(const QueueConfig& c, QueueConfigWrite& w) {
  if (!c.tenant_quotas.empty()) w.fields.emplace_back("tenant_quotas", render_quotas(c).dump());
  if (c.tenant_quotas.default_max_gpus) w.tenant_max_gpus.emplace_back("*", *c.tenant_quotas.default_max_gpus);
  for (const auto& [tenant, max] : c.tenant_quotas.max_gpus) w.tenant_max_gpus.emplace_back(tenant, max);
}

// The rate limit as JSON (read back) and as plain integers (read by claim.lua).
void store_rate_limit(const QueueConfig& c, QueueConfigWrite& w) {
  if (c.rate_limit.empty()) return;
  w.fields.emplace_back("rate_limit", rate_limit_to_json(c.rate_limit).dump());
  put(w, "rate_concurrency", c.rate_limit.concurrency);
  if (c.rate_limit.rate_limit) {
    put(w, "rate_limit_starts", c.rate_limit.rate_limit);
    put(w, "rate_period_ms", c.rate_limit.rate_period_ms);
  }
}

// The policy is kept as its name, which claim.lua reads.
void store_policy(const QueueConfig& c, QueueConfigWrite& w) {
  if (c.policy != QueuePolicy::priority) w.fields.emplace_back("policy", policy_name(c.policy));
}

void load_policy(const StoredQueueConfig& s, QueueConfig& c) {
  auto it = s.fields.find("policy");
  if (it != s.fields.end()) c.policy = parse_policy(it->second).value_or(QueuePolicy::priority);
}

// {"weights": {"tenant": w, ...}, "default_weight": w}; the spec's
// "tenant:" key prefix is accepted and dropped; enabled/strategy are accepted
// (the queue's `policy` is what switches fair share on).
void parse_fairness(const json& f, QueueConfig& c) {
  TenantFairness out;
  if (f.contains("default_weight")) out.default_weight = f["default_weight"].get<double>();
  if (f.contains("half_life_seconds")) out.half_life_seconds = f["half_life_seconds"].get<double>();
  if (f.contains("order") && f["order"] == "class") out.order = FairOrder::priority_class;  // the schema allows tenant | class
  if (f.contains("weights"))
    for (auto it = f["weights"].begin(); it != f["weights"].end(); ++it) {
      std::string tenant = it.key();
      if (tenant.rfind("tenant:", 0) == 0) tenant = tenant.substr(7);
      out.weights[tenant] = it.value().get<double>();
    }
  c.tenant_fairness = std::move(out);
}

json render_fairness(const QueueConfig& c) {
  json out = json::object();
  if (!c.tenant_fairness.weights.empty()) out["weights"] = c.tenant_fairness.weights;
  if (c.tenant_fairness.default_weight != 1) out["default_weight"] = c.tenant_fairness.default_weight;
  put(out, "half_life_seconds", c.tenant_fairness.half_life_seconds);
  if (c.tenant_fairness.order == FairOrder::priority_class) out["order"] = "class";  // the default, tenant, is not shown
  return out;
}

// The weights as sent, and under the fair policy their claim.lua form.
void store_fairness(const QueueConfig& c, QueueConfigWrite& w) {
  if (!c.tenant_fairness.empty()) w.fields.emplace_back("tenant_fairness", render_fairness(c).dump());
  if (c.policy == QueuePolicy::fair) w.fields.emplace_back("fair_tenants", fairness_for_claim(c.tenant_fairness).dump());
  if (const auto& h = c.tenant_fairness.half_life_seconds)  // kept under every policy: the use decays anyway
    w.fields.emplace_back("usage_half_life_ms", std::to_string(std::llround(*h * 1000)));
}

json backfill_to_json(const BackfillSettings& b) {
  if (!b.enabled) return false;
  return {{"after_s", b.after_s}, {"max_start_s", b.max_start_s}};
}

// Top-level `concurrency` (ojs-admin-api.md §6.6) is rate_limit.concurrency.
void parse_concurrency(const json& n, QueueConfig& c) {
  const auto value = integer(n);
  if (c.rate_limit.concurrency && *c.rate_limit.concurrency != value)
    throw invalid_field("concurrency", "must equal rate_limit.concurrency when both are given", "/concurrency");
  c.rate_limit.concurrency = value;
}

// As configured (read back), and push.lua's form: max_depth and
// overflow (the strategy when not reject).
void store_backpressure(const QueueConfig& c, QueueConfigWrite& w) {
  if (c.backpressure.empty()) return;
  w.fields.emplace_back("backpressure", backpressure_to_json(c.backpressure).dump());
  put(w, "max_depth", c.backpressure.max_depth);
  if (c.backpressure.strategy != "reject") w.fields.emplace_back("overflow", c.backpressure.strategy);
}

}  // namespace

// The members of a queue's configuration, in the answer's order.
const std::vector<QueueConfigField>& queue_config_fields() {
  static const std::vector<QueueConfigField> fields = {
      {"ml_defaults", parse_defaults, [](const QueueConfig& c) { return c.ml_defaults; }, {"ml_defaults"}},
      {"ml_limits", parse_limits, render_limits, {"ml_limits"}},
      {"budgets", parse_budgets, render_budgets, {"max_total_gpus", "max_concurrent_gpu_jobs", "max_total_gpu_memory_mb", "max_total_tpu_chips", "cohort", "cohort_borrowing_limit",
        "cohort_lending_limit"},
       store_budgets,
       load_budgets},
      {"tenant_quotas", parse_quotas, render_quotas, {"tenant_quotas"}, store_quotas},
      {"rate_limit", [](const json& r, QueueConfig& c) { c.rate_limit = parse_rate_limit(r, "rate_limit."); },
       [](const QueueConfig& c) { return rate_limit_to_json(c.rate_limit); },
       {"rate_limit", "rate_concurrency", "rate_limit_starts", "rate_period_ms"}, store_rate_limit},
      {"policy", [](const json& p, QueueConfig& c) { c.policy = parse_policy(p.get<std::string>()).value_or(QueuePolicy::priority); },
       [](const QueueConfig& c) { return json(policy_name(c.policy)); }, {"policy"}, store_policy, load_policy},
      {"tenant_fairness", parse_fairness, render_fairness, {"tenant_fairness", "fair_tenants", "usage_half_life_ms"}, store_fairness},
      {"backfill", [](const json& b, QueueConfig& c) { c.backfill = parse_backfill(b); },
       [](const QueueConfig& c) { return backfill_to_json(c.backfill); }, {"backfill"}},
      // ojs-admin-api.md §6.6: the spec's place for rate_limit.concurrency, after
      // the rate_limit row (both given must agree); kept in rate_limit, answered only
      // by the admin queue detail (admin_configuration).
      {"concurrency", parse_concurrency, nullptr, {}},
      {"retention", [](const json& r, QueueConfig& c) { c.retention = parse_retention(r); },
       [](const QueueConfig& c) { return retention_to_json(c.retention); }, {"retention"}},
      {"backpressure", [](const json& b, QueueConfig& c) { c.backpressure = parse_backpressure(b); },
       [](const QueueConfig& c) { return backpressure_to_json(c.backpressure); }, {"backpressure", "max_depth", "overflow"},
       store_backpressure},
  };
  return fields;
}

std::vector<std::string> queue_config_hash_fields() {
  std::vector<std::string> out;
  for (const auto& f : queue_config_fields()) out.insert(out.end(), f.hash_fields.begin(), f.hash_fields.end());
  return out;
}

QueueConfig parse_queue_config(const json& body) {
  schema().check(body);
  QueueConfig c;
  for (const auto& f : queue_config_fields())
    if (body.contains(f.name)) f.parse(body[f.name], c);
  return c;
}

json to_json(const QueueConfig& c, const std::string& queue) {
  json out = {{"queue", queue}, {"version", c.version}};
  for (const auto& f : queue_config_fields())
    if (f.render) out[f.name] = f.render(c);
  if (!c.updated_at.empty()) out["updated_at"] = c.updated_at;
  return out;
}

QueueConfigWrite to_stored(const QueueConfig& c) {
  QueueConfigWrite w;
  w.replaced = queue_config_hash_fields();
  for (const auto& f : queue_config_fields()) {
    if (f.store) {
      f.store(c, w);
      continue;
    }
    if (!f.render) continue;  // an alias: kept by the member it names
    const auto value = f.render(c);
    if (value != json::object() && value != json(false)) w.fields.emplace_back(f.name, value.dump());
  }
  return w;
}

QueueConfig from_stored(const StoredQueueConfig& s) {
  QueueConfig c;
  c.version = s.version;
  if (s.updated_at_ms) c.updated_at = format_rfc3339(*s.updated_at_ms);
  for (const auto& f : queue_config_fields()) {
    if (f.load) {
      f.load(s, c);
      continue;
    }
    auto it = s.fields.find(f.name);
    if (it == s.fields.end()) continue;
    const auto value = json::parse(it->second, nullptr, false);
    if (value.is_discarded()) continue;
    try {
      f.parse(value, c);  // what this broker wrote: no schema check
    } catch (const std::exception&) {
    }
  }
  return c;
}

BackfillSettings parse_backfill(const json& b) {
  BackfillSettings out;
  if (b.is_boolean()) {
    out.enabled = b.get<bool>();
    return out;
  }
  out.enabled = true;
  if (b.contains("after_s")) out.after_s = integer(b["after_s"]);
  if (b.contains("max_start_s")) out.max_start_s = integer(b["max_start_s"]);
  return out;
}

// A schema-valid value (or the stored one). The schema lists
// drop_oldest (ojs-backpressure.md §6.2 names it) so that it is refused as
// unsupported (422), not as unknown.
Backpressure parse_backpressure(const json& b) {
  Backpressure out;
  if (b.contains("max_depth") && !b["max_depth"].is_null()) {
    const auto depth = integer(b["max_depth"]);
    if (depth > 0) out.max_depth = depth;  // 0: unbounded (§6.2)
  }
  if (b.contains("strategy")) {
    const auto& s = b["strategy"];
    if (s == "drop_oldest")
      throw OjsError(ErrorCode::unsupported, "backpressure.strategy: drop_oldest is not supported; use reject or block",
                     {{"field", "backpressure.strategy"}, {"rule", "must be \"reject\" or \"block\""}});
    out.strategy = s.get<std::string>();
  }
  if (b.contains("warning_threshold")) out.warning_threshold = b["warning_threshold"].get<double>();
  return out;
}

json backpressure_to_json(const Backpressure& b) {
  return {{"max_depth", b.max_depth.value_or(0)}, {"strategy", b.strategy}, {"warning_threshold", b.warning_threshold}};
}

std::optional<QueuePolicy> parse_policy(const std::string& name) {
  if (name == "priority") return QueuePolicy::priority;
  if (name == "fifo") return QueuePolicy::fifo;
  if (name == "sjf") return QueuePolicy::sjf;
  if (name == "fair") return QueuePolicy::fair;
  return std::nullopt;
}

const char* policy_name(QueuePolicy policy) {
  switch (policy) {
    case QueuePolicy::fifo: return "fifo";
    case QueuePolicy::sjf: return "sjf";
    case QueuePolicy::fair: return "fair";
    case QueuePolicy::priority: break;
  }
  return "priority";
}

int TenantFairness::slot_of(const std::string& tenant) const {
  auto it = weights.find(tenant);
  return it == weights.end() ? 0 : 1 + static_cast<int>(std::distance(weights.begin(), it));
}

json fairness_for_claim(const TenantFairness& f) {
  json tenants = json::object();
  for (const auto& [tenant, weight] : f.weights) tenants[tenant] = {f.slot_of(tenant), weight};
  return {{"base", kFairBandBase},
          {"slots", f.weights.size() + 1},
          {"default_weight", f.default_weight},
          {"tenants", tenants},
          {"order", f.order == FairOrder::priority_class ? "class" : "tenant"}};  // _lib_fairshare.lua fair_head
}

// The schema's rate_limit property, then the period, which a schema cannot parse.
QueueRateLimit parse_rate_limit(const json& r, const std::string& prefix) {
  static const JsonSchema rate_limit_schema = schema().at("/properties/rate_limit");
  const std::string pointer = prefix.empty() ? "" : "/" + prefix.substr(0, prefix.size() - 1);
  rate_limit_schema.check(r, prefix, pointer);
  QueueRateLimit out;
  if (r.contains("key")) out.key = r["key"].get<std::string>();
  if (r.contains("concurrency")) out.concurrency = integer(r["concurrency"]);
  // The spec's form (ojs-admin-api.md §6.6): {limit, period} directly, the same as rate {limit, period}.
  const bool spec_form = r.contains("limit") || r.contains("period");
  if (spec_form && r.contains("rate"))
    throw invalid_field(prefix + "rate", "give either rate {limit, period} or limit and period, not both", pointer + "/rate");
  if (spec_form && !r.contains("limit")) throw invalid_field(prefix + "limit", "is required with period: an integer >= 1", pointer + "/limit");
  if (spec_form && !r.contains("period"))
    throw invalid_field(prefix + "period", "is required with limit: an ISO 8601 duration such as \"PT1M\"", pointer + "/period");
  if (r.contains("rate") || spec_form) {
    const auto& rate = spec_form ? r : r["rate"];
    const std::string at = spec_form ? prefix : prefix + "rate.";
    const std::string at_pointer = spec_form ? pointer : pointer + "/rate";
    const auto ms = parse_iso8601_duration(rate["period"].get<std::string>());
    if (!ms || *ms <= 0)
      throw invalid_field(at + "period", "must be a positive ISO 8601 duration such as \"PT1M\"", at_pointer + "/period");
    out.rate_limit = integer(rate["limit"]);
    out.rate_period_ms = *ms;
    out.rate_period = rate["period"].get<std::string>();
  }
  return out;
}

void check_rate_limit_key(const json& key, const std::string& field) {
  static const JsonSchema key_schema = schema().at("/properties/rate_limit/properties/key");
  key_schema.check(key, field);
}

json rate_limit_to_json(const QueueRateLimit& l) {
  json out = json::object();
  if (!l.key.empty()) out["key"] = l.key;
  if (l.concurrency) out["concurrency"] = *l.concurrency;
  if (l.rate_limit) out["rate"] = {{"limit", *l.rate_limit}, {"period", l.rate_period}};
  return out;
}

bool MlLimits::empty() const {
  return !max_gpu_count && !max_gpu_memory_gb && !max_memory_gb && !max_timeout_seconds && allowed_gpu_types.empty() &&
         allowed_priority_classes.empty();
}

bool is_valid_tenant(const std::string& tenant) {
  if (tenant.empty() || tenant.size() > 64) return false;
  return std::all_of(tenant.begin(), tenant.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-'; });
}

// The schema checked the members' types and bounds; the durations are parsed here.
Retention parse_retention(const json& r) {
  Retention out;
  for (const char* state : {"completed", "discarded", "cancelled"}) {
    if (!r.contains(state)) continue;
    const auto ms = parse_iso8601_duration(r[state].get<std::string>());
    if (!ms || *ms <= 0)
      throw invalid_field(std::string("retention.") + state, "must be a positive ISO 8601 duration such as \"P7D\"",
                          std::string("/retention/") + state);
    out.age[state] = r[state].get<std::string>();
    out.age_ms[state] = *ms;
  }
  if (r.contains("max_jobs")) out.max_jobs = integer(r["max_jobs"]);
  return out;
}

json admin_configuration(const QueueConfig& c, const std::string& queue) {
  json out = to_json(c, queue);
  if (c.rate_limit.concurrency) out["concurrency"] = *c.rate_limit.concurrency;
  if (c.rate_limit.rate_limit) {
    out["rate_limit"]["limit"] = *c.rate_limit.rate_limit;
    out["rate_limit"]["period"] = c.rate_limit.rate_period;
  }
  return out;
}

json retention_to_json(const Retention& r) {
  json out = json::object();
  for (const auto& [state, iso] : r.age) out[state] = iso;
  if (r.max_jobs) out["max_jobs"] = *r.max_jobs;
  return out;
}

}  // namespace ojs::broker::governance
