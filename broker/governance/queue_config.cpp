#include "broker/governance/queue_config.hpp"

#include <algorithm>
#include <initializer_list>
#include <iterator>

#include "ojs/core/error.hpp"
#include "ojs/core/time.hpp"
#include "ojs/ml/requirements.hpp"
#include "ojs/ml/types.hpp"

namespace ojs::broker::governance {

using nlohmann::json;

namespace {

void only_keys(const json& object, std::initializer_list<std::string_view> allowed, const std::string& prefix) {
  for (auto it = object.begin(); it != object.end(); ++it)
    if (std::find(allowed.begin(), allowed.end(), it.key()) == allowed.end())
      throw invalid_field(prefix + it.key(), "is not a known member");
}

const json& object_member(const json& parent, const char* name, const std::string& field) {
  if (!parent[name].is_object()) throw invalid_field(field, "must be an object");
  return parent[name];
}

long long non_negative_int(const json& v, const std::string& field) {
  if (!v.is_number_integer() || v.get<long long>() < 0) throw invalid_field(field, "must be an integer >= 0");
  return v.get<long long>();
}

double positive_number(const json& v, const std::string& field) {
  if (!v.is_number() || v.get<double>() <= 0) throw invalid_field(field, "must be a number > 0");
  return v.get<double>();
}

std::vector<std::string> lowercase_strings(const json& v, const std::string& field) {
  if (!v.is_array()) throw invalid_field(field, "must be an array of strings");
  std::vector<std::string> out;
  for (const auto& s : v) {
    if (!s.is_string() || s.get<std::string>().empty()) throw invalid_field(field, "must be an array of non-empty strings");
    out.push_back(ml::lowercase(s.get<std::string>()));
  }
  return out;
}

json parse_defaults(const json& defaults) {
  if (!defaults.is_object()) throw invalid_field("ml_defaults", "must be an object of ext_ml_* attributes");
  for (auto it = defaults.begin(); it != defaults.end(); ++it)
    if (it.key().rfind("ext_ml_", 0) != 0) throw invalid_field("ml_defaults." + it.key(), "must be an ext_ml_* attribute");
  try {
    (void)ml::parse_requirements(defaults);  // the same rules as a job's attributes
  } catch (const OjsError& e) {
    const auto& d = e.details();
    const std::string field = d.is_object() && d.contains("field") ? d["field"].get<std::string>() : std::string("?");
    const std::string rule = d.is_object() && d.contains("rule") ? d["rule"].get<std::string>() : std::string(e.what());
    throw invalid_field("ml_defaults." + field, rule);
  }
  return defaults;
}

MlLimits parse_limits(const json& l) {
  only_keys(l, {"max_gpu_count", "max_gpu_memory_gb", "max_memory_gb", "max_timeout_seconds", "allowed_gpu_types",
                "allowed_priority_classes"},
            "ml_limits.");
  MlLimits out;
  if (l.contains("max_gpu_count")) out.max_gpu_count = non_negative_int(l["max_gpu_count"], "ml_limits.max_gpu_count");
  if (l.contains("max_gpu_memory_gb")) out.max_gpu_memory_gb = positive_number(l["max_gpu_memory_gb"], "ml_limits.max_gpu_memory_gb");
  if (l.contains("max_memory_gb")) out.max_memory_gb = positive_number(l["max_memory_gb"], "ml_limits.max_memory_gb");
  if (l.contains("max_timeout_seconds"))
    out.max_timeout_seconds = non_negative_int(l["max_timeout_seconds"], "ml_limits.max_timeout_seconds");
  if (l.contains("allowed_gpu_types")) out.allowed_gpu_types = lowercase_strings(l["allowed_gpu_types"], "ml_limits.allowed_gpu_types");
  if (l.contains("allowed_priority_classes")) {
    out.allowed_priority_classes = lowercase_strings(l["allowed_priority_classes"], "ml_limits.allowed_priority_classes");
    for (const auto& c : out.allowed_priority_classes)
      if (!ml::parse_priority_class(c)) throw invalid_field("ml_limits.allowed_priority_classes", "unknown class '" + c + "' (spot, on-demand, reserved)");
  }
  return out;
}

Budgets parse_budgets(const json& b) {
  only_keys(b, {"max_concurrent_gpu_jobs", "max_total_gpus"}, "budgets.");
  Budgets out;
  if (b.contains("max_concurrent_gpu_jobs"))
    out.max_concurrent_gpu_jobs = non_negative_int(b["max_concurrent_gpu_jobs"], "budgets.max_concurrent_gpu_jobs");
  if (b.contains("max_total_gpus")) out.max_total_gpus = non_negative_int(b["max_total_gpus"], "budgets.max_total_gpus");
  return out;
}

TenantQuotas parse_quotas(const json& q) {
  only_keys(q, {"default_max_gpus", "tenants"}, "tenant_quotas.");
  TenantQuotas out;
  if (q.contains("default_max_gpus")) out.default_max_gpus = non_negative_int(q["default_max_gpus"], "tenant_quotas.default_max_gpus");
  if (q.contains("tenants")) {
    const auto& tenants = object_member(q, "tenants", "tenant_quotas.tenants");
    // As many named tenants as fair share weighs (its slots bound them); 4,000 once hit Lua's unpack limit.
    constexpr std::size_t kMaxQuotaTenants = kMaxFairSlots - 1;
    if (tenants.size() > kMaxQuotaTenants)
      throw invalid_field("tenant_quotas.tenants", "at most " + std::to_string(kMaxQuotaTenants) + " tenants");
    for (auto it = tenants.begin(); it != tenants.end(); ++it) {
      const std::string field = "tenant_quotas.tenants." + it.key();
      if (!is_valid_tenant(it.key())) throw invalid_field(field, "tenant names are 1-64 of [A-Za-z0-9._-]");
      if (!it.value().is_object() || !it.value().contains("max_gpus")) throw invalid_field(field, "must be {\"max_gpus\": N}");
      only_keys(it.value(), {"max_gpus"}, field + ".");
      out.max_gpus[it.key()] = non_negative_int(it.value()["max_gpus"], field + ".max_gpus");
    }
  }
  return out;
}

// [fairshare] {"weights": {"tenant": w, ...}, "default_weight": w}; the spec's
// "tenant:" key prefix is accepted and dropped; enabled/strategy are accepted
// (the queue's `policy` is what switches fair share on).
TenantFairness parse_fairness(const json& f) {
  only_keys(f, {"weights", "default_weight", "enabled", "strategy"}, "tenant_fairness.");
  TenantFairness out;
  if (f.contains("strategy") && f["strategy"] != "fair-share")
    throw invalid_field("tenant_fairness.strategy", "must be \"fair-share\"");
  if (f.contains("enabled") && !f["enabled"].is_boolean()) throw invalid_field("tenant_fairness.enabled", "must be a boolean");
  if (f.contains("default_weight")) out.default_weight = positive_number(f["default_weight"], "tenant_fairness.default_weight");
  if (f.contains("weights")) {
    const auto& weights = object_member(f, "weights", "tenant_fairness.weights");
    if (weights.size() >= static_cast<std::size_t>(kMaxFairSlots))
      throw invalid_field("tenant_fairness.weights", "at most " + std::to_string(kMaxFairSlots - 1) + " tenants");
    for (auto it = weights.begin(); it != weights.end(); ++it) {
      std::string tenant = it.key();
      if (tenant.rfind("tenant:", 0) == 0) tenant = tenant.substr(7);
      const std::string field = "tenant_fairness.weights." + it.key();
      if (!is_valid_tenant(tenant)) throw invalid_field(field, "tenant names are 1-64 of [A-Za-z0-9._-]");
      out.weights[tenant] = positive_number(it.value(), field);
    }
  }
  return out;
}

}  // namespace

BackfillSettings parse_backfill(const json& b) {
  BackfillSettings out;
  if (b.is_boolean()) {
    out.enabled = b.get<bool>();
    return out;
  }
  if (!b.is_object()) throw invalid_field("backfill", "must be a boolean or an object");
  only_keys(b, {"after_s", "max_start_s"}, "backfill.");
  out.enabled = true;
  if (b.contains("after_s")) {
    out.after_s = non_negative_int(b["after_s"], "backfill.after_s");
    if (out.after_s > 86400) throw invalid_field("backfill.after_s", "must be an integer between 0 and 86400");
  }
  if (b.contains("max_start_s")) {
    out.max_start_s = non_negative_int(b["max_start_s"], "backfill.max_start_s");
    if (out.max_start_s < 1 || out.max_start_s > 31536000)
      throw invalid_field("backfill.max_start_s", "must be an integer between 1 and 31536000");
  }
  return out;
}

json backfill_to_json(const BackfillSettings& b) {
  if (!b.enabled) return false;
  return {{"after_s", b.after_s}, {"max_start_s", b.max_start_s}};
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

json fairness_to_json(const TenantFairness& f) {
  json out = json::object();
  if (!f.weights.empty()) out["weights"] = f.weights;
  if (f.default_weight != 1) out["default_weight"] = f.default_weight;
  return out;
}

TenantFairness fairness_from_json(const json& stored) { return stored.is_object() ? parse_fairness(stored) : TenantFairness{}; }

json fairness_for_claim(const TenantFairness& f) {
  json tenants = json::object();
  for (const auto& [tenant, weight] : f.weights) tenants[tenant] = {f.slot_of(tenant), weight};
  return {{"base", kFairBandBase}, {"slots", f.weights.size() + 1}, {"default_weight", f.default_weight}, {"tenants", tenants}};
}

QueueRateLimit parse_rate_limit(const json& r, const std::string& prefix) {
  if (!r.is_object()) throw invalid_field(prefix.empty() ? "$" : prefix.substr(0, prefix.size() - 1), "must be an object");
  only_keys(r, {"concurrency", "rate"}, prefix);
  QueueRateLimit out;
  if (r.contains("concurrency")) out.concurrency = non_negative_int(r["concurrency"], prefix + "concurrency");
  if (r.contains("rate")) {
    const auto& rate = object_member(r, "rate", prefix + "rate");
    only_keys(rate, {"limit", "period"}, prefix + "rate.");
    if (!rate.contains("limit") || !rate["limit"].is_number_integer() || rate["limit"].get<long long>() < 1)
      throw invalid_field(prefix + "rate.limit", "is required: an integer >= 1");
    if (!rate.contains("period") || !rate["period"].is_string()) throw invalid_field(prefix + "rate.period", "is required: an ISO 8601 duration such as \"PT1M\"");
    const auto ms = parse_iso8601_duration(rate["period"].get<std::string>());
    if (!ms || *ms <= 0) throw invalid_field(prefix + "rate.period", "must be a positive ISO 8601 duration such as \"PT1M\"");
    out.rate_limit = rate["limit"].get<long long>();
    out.rate_period_ms = *ms;
    out.rate_period = rate["period"].get<std::string>();
  }
  return out;
}

json rate_limit_to_json(const QueueRateLimit& l) {
  json out = json::object();
  if (l.concurrency) out["concurrency"] = *l.concurrency;
  if (l.rate_limit) out["rate"] = {{"limit", *l.rate_limit}, {"period", l.rate_period}};
  return out;
}

namespace {

template <class T>
void put(json& out, const char* name, const std::optional<T>& v) {
  if (v) out[name] = *v;
}

}  // namespace

bool MlLimits::empty() const {
  return !max_gpu_count && !max_gpu_memory_gb && !max_memory_gb && !max_timeout_seconds && allowed_gpu_types.empty() &&
         allowed_priority_classes.empty();
}

bool is_valid_tenant(const std::string& tenant) {
  if (tenant.empty() || tenant.size() > 64) return false;
  return std::all_of(tenant.begin(), tenant.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-'; });
}

QueueConfig parse_queue_config(const json& body) {
  if (!body.is_object()) throw invalid_field("$", "request body must be a JSON object");
  only_keys(body, {"ml_defaults", "ml_limits", "budgets", "tenant_quotas", "rate_limit", "policy", "tenant_fairness", "backfill", "version",
                    "expected_version", "updated_at", "queue"},
            "");
  QueueConfig c;
  if (body.contains("ml_defaults")) c.ml_defaults = parse_defaults(body["ml_defaults"]);
  if (body.contains("ml_limits")) c.ml_limits = parse_limits(object_member(body, "ml_limits", "ml_limits"));
  if (body.contains("budgets")) c.budgets = parse_budgets(object_member(body, "budgets", "budgets"));
  if (body.contains("tenant_quotas")) c.tenant_quotas = parse_quotas(object_member(body, "tenant_quotas", "tenant_quotas"));
  if (body.contains("rate_limit")) c.rate_limit = parse_rate_limit(body["rate_limit"], "rate_limit.");
  if (body.contains("policy")) {
    const auto p = body["policy"].is_string() ? parse_policy(body["policy"].get<std::string>()) : std::nullopt;
    if (!p) throw invalid_field("policy", "must be one of \"fifo\", \"priority\", \"sjf\", \"fair\"");
    c.policy = *p;
  }
  if (body.contains("tenant_fairness")) c.tenant_fairness = parse_fairness(object_member(body, "tenant_fairness", "tenant_fairness"));
  if (body.contains("backfill")) c.backfill = parse_backfill(body["backfill"]);  // [backfill]
  return c;
}

json limits_to_json(const MlLimits& l) {
  json out = json::object();
  put(out, "max_gpu_count", l.max_gpu_count);
  put(out, "max_gpu_memory_gb", l.max_gpu_memory_gb);
  put(out, "max_memory_gb", l.max_memory_gb);
  put(out, "max_timeout_seconds", l.max_timeout_seconds);
  if (!l.allowed_gpu_types.empty()) out["allowed_gpu_types"] = l.allowed_gpu_types;
  if (!l.allowed_priority_classes.empty()) out["allowed_priority_classes"] = l.allowed_priority_classes;
  return out;
}

MlLimits limits_from_json(const json& stored) { return stored.is_object() ? parse_limits(stored) : MlLimits{}; }

json quotas_to_json(const TenantQuotas& q) {
  json out = json::object();
  put(out, "default_max_gpus", q.default_max_gpus);
  if (!q.max_gpus.empty()) {
    out["tenants"] = json::object();
    for (const auto& [tenant, max] : q.max_gpus) out["tenants"][tenant] = {{"max_gpus", max}};
  }
  return out;
}

TenantQuotas quotas_from_json(const json& stored) { return stored.is_object() ? parse_quotas(stored) : TenantQuotas{}; }

json to_json(const QueueConfig& c, const std::string& queue) {
  json budgets = json::object();
  put(budgets, "max_concurrent_gpu_jobs", c.budgets.max_concurrent_gpu_jobs);
  put(budgets, "max_total_gpus", c.budgets.max_total_gpus);
  json out = {{"queue", queue},
              {"version", c.version},
              {"ml_defaults", c.ml_defaults},
              {"ml_limits", limits_to_json(c.ml_limits)},
              {"budgets", budgets},
              {"tenant_quotas", quotas_to_json(c.tenant_quotas)},
              {"rate_limit", rate_limit_to_json(c.rate_limit)},
              {"policy", policy_name(c.policy)},
              {"tenant_fairness", fairness_to_json(c.tenant_fairness)},
              {"backfill", backfill_to_json(c.backfill)}};
  if (!c.updated_at.empty()) out["updated_at"] = c.updated_at;
  return out;
}

}  // namespace ojs::broker::governance
