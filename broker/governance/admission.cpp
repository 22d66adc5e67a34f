#include "broker/governance/admission.hpp"

#include "broker/governance/defaults.hpp"
#include "broker/governance/limits.hpp"
#include "ojs/core/error.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker::governance {

using nlohmann::json;

namespace {

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

void refuse_label(const std::string& attribute, const std::string& key, const std::string& prefix) {
  throw OjsError(ErrorCode::forbidden, attribute + " uses label key '" + key + "', reserved to admins (prefix " + prefix + ")",
                 {{"field", attribute}, {"key", key}, {"reserved_prefix", prefix}});
}

void check_key(const std::string& attribute, const std::string& key, const std::vector<std::string>& prefixes) {
  for (const auto& p : prefixes)
    if (starts_with(key, p)) refuse_label(attribute, key, p);
}

bool model_allowed(const std::string& id, const std::vector<std::string>& allowed) {
  for (const auto& a : allowed) {
    if (!a.empty() && a.back() == '*' ? starts_with(id, a.substr(0, a.size() - 1)) : id == a) return true;
  }
  return false;
}

long long positive_count(const json& v, const std::string& field) {
  if (!v.is_number_integer() || v.get<long long>() < 1) throw invalid_field(field, "must be an integer >= 1");
  return v.get<long long>();
}

// A job's options.rate_limit (ojs-rate-limiting.md; kept flattened in the document) as
// a queue rate limit: max_per_second / max_per_minute / max_per_hour, or rate with a
// period ("second", "minute", "hour" or an ISO 8601 duration), and concurrency. Its
// `key` names the limit; here the queue is the key. nullopt: the job carries none.
std::optional<QueueRateLimit> job_rate_limit(const json& document) {
  if (!document.contains("rate_limit")) return std::nullopt;
  const auto& r = document["rate_limit"];
  const std::string at = "options.rate_limit";
  if (!r.is_object()) throw invalid_field(at, "must be an object");
  QueueRateLimit out;
  static const std::pair<const char*, const char*> kPer[] = {{"max_per_second", "PT1S"}, {"max_per_minute", "PT1M"}, {"max_per_hour", "PT1H"}};
  const char* kOne = "give one of max_per_second, max_per_minute, max_per_hour and rate";
  for (const auto& [field, period] : kPer)
    if (r.contains(field)) {
      if (out.rate_limit) throw invalid_field(at + "." + field, kOne);
      out.rate_limit = positive_count(r[field], at + "." + field);
      out.rate_period = period;
    }
  if (r.contains("rate")) {
    if (out.rate_limit) throw invalid_field(at + ".rate", kOne);
    out.rate_limit = positive_count(r["rate"], at + ".rate");
    const auto& p = r.contains("period") ? r["period"] : json("second");
    if (!p.is_string()) throw invalid_field(at + ".period", "must be second, minute, hour or an ISO 8601 duration");
    const auto word = p.get<std::string>();
    out.rate_period = word == "second" ? "PT1S" : word == "minute" ? "PT1M" : word == "hour" ? "PT1H" : word;
  }
  if (out.rate_limit) {
    const auto ms = parse_iso8601_duration(out.rate_period);
    if (!ms || *ms <= 0) throw invalid_field(at + ".period", "must be second, minute, hour or an ISO 8601 duration");
    out.rate_period_ms = *ms;
  }
  if (r.contains("concurrency")) out.concurrency = positive_count(r["concurrency"], at + ".concurrency");
  if (r.contains("key")) {
    check_rate_limit_key(r["key"], at + ".key");
    out.key = r["key"].get<std::string>();
  }
  if (out.empty()) return std::nullopt;
  return out;
}

}  // namespace

std::string resolve_tenant(const json& document, const auth::Identity* caller) {
  std::string from_meta;
  if (document.contains("meta") && document["meta"].is_object() && document["meta"].contains("tenant_id")) {
    const auto& t = document["meta"]["tenant_id"];
    if (!t.is_string() || !is_valid_tenant(t.get<std::string>()))
      throw invalid_field("meta.tenant_id", "must be 1-64 of [A-Za-z0-9._-]");
    from_meta = t.get<std::string>();
  }
  if (caller && !caller->tenant.empty()) {  // a token pinned to a tenant pushes for that tenant only
    if (!from_meta.empty() && from_meta != caller->tenant)
      throw OjsError(ErrorCode::forbidden, "token '" + caller->name + "' may only push for tenant " + caller->tenant,
                     {{"field", "meta.tenant_id"}, {"value", from_meta}, {"tenant", caller->tenant}});
    return caller->tenant;
  }
  if (!from_meta.empty()) return from_meta;
  if (caller && !caller->anonymous && is_valid_tenant(caller->name)) return caller->name;
  return {};
}

void check_label_keys(const ml::Requirements& r, const std::vector<std::string>& prefixes) {
  if (prefixes.empty()) return;
  for (const auto& [key, _] : r.hard.node_selector) check_key("ext_ml_node_selector", key, prefixes);
  for (const auto& rule : r.hard.required_affinity) check_key("ext_ml_affinity", rule.key, prefixes);
  for (const auto& rule : r.soft.preferred_affinity) check_key("ext_ml_affinity", rule.key, prefixes);
  for (const auto& rule : r.hard.anti_affinity) check_key("ext_ml_anti_affinity", rule.key, prefixes);
}

void check_model_allowed(const ml::Requirements& r, const std::vector<std::string>& allowed_models) {
  if (allowed_models.empty()) return;
  for (const auto* id : {&r.model.id, &r.hard.pinned_model_id, &r.soft.locality_model_id})
    if (!id->empty() && !model_allowed(*id, allowed_models))
      throw OjsError(ErrorCode::validation_error, "broker allow-list allowed_models: model '" + *id + "' is not allowed",
                     {{"limit", "allowed_models"}, {"scope", "broker"}, {"field", "ext_ml_model_id"}, {"value", *id},
                      {"allowed", allowed_models}});
}

void apply_timeout_bound(NewJob& job, const ml::Requirements& r, std::initializer_list<std::optional<long long>> bounds) {
  if (r.scheduling.timeout_seconds || (job.timeout_ms && *job.timeout_ms > 0)) return;  // bounded by enforce_limits
  std::optional<long long> tightest;
  for (const auto& b : bounds)
    if (b && (!tightest || *b < *tightest)) tightest = b;
  if (!tightest) return;
  // A job with no timeout (or 0) would run unbounded: it gets the limit as its timeout.
  job.timeout_ms = *tightest * 1000;
  job.document["timeout_ms"] = *job.timeout_ms;
}

// The queue's rate limit is the one model (claim.lua enforces it at FETCH): a job's
// limit becomes its queue's when the queue has none; a configured one stays as it is.
std::shared_ptr<const QueueConfig> Admission::adopt_job_rate_limit(const NewJob& job, std::shared_ptr<const QueueConfig> config) {
  const auto wanted = job_rate_limit(job.document);
  if (!wanted || !config->rate_limit.empty()) return config;
  QueueConfig changed = *config;
  changed.rate_limit = *wanted;
  try {
    configs_.save(job.queue, changed, config->version);
  } catch (const OjsError& e) {
    if (e.code() != ErrorCode::conflict) throw;  // another writer came first: its configuration stands
  }
  return configs_.fresh(job.queue);
}

std::string Admission::admit(NewJob& job, const auth::Identity* caller, JobOrder* order, bool cached_config,
                             long long* config_version, ml::Requirements* requirements) {
  const auto shared = adopt_job_rate_limit(job, cached_config ? configs_.cached(job.queue) : configs_.fresh(job.queue));
  const QueueConfig& config = *shared;
  if (config_version) *config_version = config.version;
  apply_defaults(job.document, config.ml_defaults);
  const ml::Requirements r = ml::parse_requirements(job.document);  // 400 naming the attribute
  enforce_limits(r, job.timeout_ms, policy_.global_bounds, "broker", job.timeout_field);
  enforce_limits(r, job.timeout_ms, config.ml_limits, "queue", job.timeout_field);
  apply_timeout_bound(job, r, {policy_.global_bounds.max_timeout_seconds, config.ml_limits.max_timeout_seconds});
  if (!caller || !caller->has(auth::Role::admin)) check_label_keys(r, policy_.admin_label_prefixes);
  check_model_allowed(r, policy_.allowed_models);
  std::string tenant = resolve_tenant(job.document, caller);
  if (order) *order = {config.policy, config.policy == QueuePolicy::fair ? config.tenant_fairness.slot_of(tenant) : 0};
  // Nothing above changed what parse_requirements reads (ext_ml_* and meta.*: the
  // timeout bound writes the OJS timeout_ms).
  if (requirements) *requirements = r;
  return tenant;
}

}  // namespace ojs::broker::governance
