#include "broker/governance/queue_config_store.hpp"

#include "broker/store/keys.hpp"
#include "ojs/core/error.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker::governance {

using nlohmann::json;

namespace {

std::optional<long long> integer_of(const RedisValue& v) {
  if (v.is_nil() || v.str.empty()) return std::nullopt;
  try {
    return std::stoll(v.str);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

json json_of(const RedisValue& v) {
  if (v.is_nil() || v.str.empty()) return json::object();
  auto parsed = json::parse(v.str, nullptr, false);
  return parsed.is_discarded() ? json::object() : parsed;
}

std::map<std::string, long long> integer_hash(const RedisValue& flat) {
  std::map<std::string, long long> out;
  for (std::size_t i = 0; i + 1 < flat.elements.size(); i += 2)
    if (auto n = integer_of(flat.elements[i + 1])) out[flat.elements[i].str] = *n;
  return out;
}

}  // namespace

bool Reconciliation::drift() const {
  if (ledger_gpus != actual_gpus || ledger_jobs != actual_jobs) return true;
  for (const auto& t : tenants)
    if (t.ledger != t.actual) return true;
  return false;
}

json Reconciliation::to_json(const std::string& queue) const {
  json rows = json::array();
  for (const auto& t : tenants) rows.push_back({{"tenant", t.tenant}, {"ledger_gpus", t.ledger}, {"active_gpus", t.actual}});
  return {{"queue", queue},
          {"ledger", {{"gpus", ledger_gpus}, {"gpu_jobs", ledger_jobs}}},
          {"active", {{"gpus", actual_gpus}, {"gpu_jobs", actual_jobs}}},
          {"drift", {{"gpus", ledger_gpus - actual_gpus}, {"gpu_jobs", ledger_jobs - actual_jobs}}},
          {"tenants", rows},
          {"consistent", !drift()},
          {"repaired", repaired}};
}

QueueConfig QueueConfigStore::load(const std::string& queue) {
  auto v = redis_.command({"HMGET", keys::config(queue), "version", "updated_at", "max_total_gpus", "max_concurrent_gpu_jobs",
                           "ml_defaults", "ml_limits", "tenant_quotas", "rate_limit", "policy", "tenant_fairness",
                           "backfill"});
  QueueConfig c;
  if (v.elements.size() < 10) return c;
  c.version = integer_of(v.elements[0]).value_or(0);
  if (auto at = integer_of(v.elements[1])) c.updated_at = format_rfc3339(*at);
  c.budgets.max_total_gpus = integer_of(v.elements[2]);
  c.budgets.max_concurrent_gpu_jobs = integer_of(v.elements[3]);
  c.ml_defaults = json_of(v.elements[4]);
  c.ml_limits = limits_from_json(json_of(v.elements[5]));
  c.tenant_quotas = quotas_from_json(json_of(v.elements[6]));
  c.rate_limit = parse_rate_limit(json_of(v.elements[7]), "rate_limit.");
  if (!v.elements[8].is_nil()) c.policy = parse_policy(v.elements[8].str).value_or(QueuePolicy::priority);
  c.tenant_fairness = fairness_from_json(json_of(v.elements[9]));
  if (v.elements.size() > 10 && !v.elements[10].is_nil()) c.backfill = parse_backfill(json_of(v.elements[10]));  // [backfill]
  return c;
}

long long QueueConfigStore::save(const std::string& queue, const QueueConfig& c, std::optional<long long> expected_version) {
  std::vector<std::pair<std::string, std::string>> fields;
  if (c.budgets.max_total_gpus) fields.emplace_back("max_total_gpus", std::to_string(*c.budgets.max_total_gpus));
  if (c.budgets.max_concurrent_gpu_jobs) fields.emplace_back("max_concurrent_gpu_jobs", std::to_string(*c.budgets.max_concurrent_gpu_jobs));
  if (!c.ml_defaults.empty()) fields.emplace_back("ml_defaults", c.ml_defaults.dump());
  if (!c.ml_limits.empty()) fields.emplace_back("ml_limits", limits_to_json(c.ml_limits).dump());
  if (!c.tenant_quotas.empty()) fields.emplace_back("tenant_quotas", quotas_to_json(c.tenant_quotas).dump());
  // The rate limit as JSON (read back) and as plain integers (read by claim.lua).
  if (!c.rate_limit.empty()) fields.emplace_back("rate_limit", rate_limit_to_json(c.rate_limit).dump());
  if (c.rate_limit.concurrency) fields.emplace_back("rate_concurrency", std::to_string(*c.rate_limit.concurrency));
  if (c.rate_limit.rate_limit) {
    fields.emplace_back("rate_limit_starts", std::to_string(*c.rate_limit.rate_limit));
    fields.emplace_back("rate_period_ms", std::to_string(c.rate_limit.rate_period_ms));
  }
  // [fairshare] The policy (read by claim.lua), the weights as sent, and their claim form.
  if (c.policy != QueuePolicy::priority) fields.emplace_back("policy", policy_name(c.policy));
  if (!c.tenant_fairness.empty()) fields.emplace_back("tenant_fairness", fairness_to_json(c.tenant_fairness).dump());
  if (c.policy == QueuePolicy::fair) fields.emplace_back("fair_tenants", fairness_for_claim(c.tenant_fairness).dump());
  // [backfill] read by the preemption controller's backfill pass
  if (c.backfill.enabled) fields.emplace_back("backfill", backfill_to_json(c.backfill).dump());
  std::vector<std::string> args{expected_version ? std::to_string(*expected_version) : std::string(), std::to_string(now_ms()),
                                std::to_string(fields.size())};
  for (auto& [k, v] : fields) {
    args.push_back(k);
    args.push_back(v);
  }
  if (c.tenant_quotas.default_max_gpus) {
    args.push_back("*");
    args.push_back(std::to_string(*c.tenant_quotas.default_max_gpus));
  }
  for (const auto& [tenant, max] : c.tenant_quotas.max_gpus) {
    args.push_back(tenant);
    args.push_back(std::to_string(max));
  }
  auto reply = redis_.eval("queue_config", {keys::config(queue), keys::tenant_quotas(queue)}, args);
  if (reply.elements.size() < 2) throw std::runtime_error("malformed queue_config reply");
  const long long version = reply.elements[1].integer;
  if (reply.elements[0].str == "conflict")
    throw OjsError(ErrorCode::conflict,
                   "queue " + queue + " configuration is at version " + std::to_string(version) + ", not " +
                       std::to_string(expected_version.value_or(0)) + "; re-read it and retry",
                   {{"queue", queue}, {"current_version", version}, {"expected_version", expected_version.value_or(0)}});
  return version;
}

json QueueConfigStore::budget(const std::string& queue) {
  auto r = redis_.pipeline({{"HMGET", keys::config(queue), "max_total_gpus", "max_concurrent_gpu_jobs"},
                            {"HMGET", keys::ledger(queue), "gpus", "gpu_jobs"},
                            {"HGETALL", keys::tenant_quotas(queue)},
                            {"HGETALL", keys::tenant_ledger(queue)}});
  json limits = json::object();
  if (auto v = integer_of(r[0].elements[0])) limits["max_total_gpus"] = *v;
  if (auto v = integer_of(r[0].elements[1])) limits["max_concurrent_gpu_jobs"] = *v;
  const auto quotas = integer_hash(r[2]);
  const auto used = integer_hash(r[3]);
  json tenants = json::object();
  for (const auto& [tenant, max] : quotas)
    if (tenant != "*") tenants[tenant]["max_gpus"] = max;
  for (const auto& [tenant, gpus] : used) {
    tenants[tenant]["gpus_in_use"] = gpus;
    if (!tenants[tenant].contains("max_gpus") && quotas.count("*")) tenants[tenant]["max_gpus"] = quotas.at("*");
  }
  for (auto& [tenant, entry] : tenants.items())
    if (!entry.contains("gpus_in_use")) entry["gpus_in_use"] = 0;
  json out = {{"queue", queue},
              {"limits", limits},
              {"in_use", {{"gpus", integer_of(r[1].elements[0]).value_or(0)}, {"gpu_jobs", integer_of(r[1].elements[1]).value_or(0)}}},
              {"tenants", tenants}};
  if (quotas.count("*")) out["default_tenant_max_gpus"] = quotas.at("*");
  return out;
}

Reconciliation QueueConfigStore::reconcile(const std::string& queue, bool repair) {
  auto r = redis_.eval("reconcile",
                       {keys::active(queue), keys::ledger(queue), keys::tenant_ledger(queue), keys::job_prefix(queue), keys::gangs(queue)},
                       {repair ? "1" : "0"});
  if (r.elements.size() < 6) throw std::runtime_error("malformed reconcile reply");
  Reconciliation out;
  out.ledger_gpus = r.elements[0].integer;
  out.ledger_jobs = r.elements[1].integer;
  out.actual_gpus = r.elements[2].integer;
  out.actual_jobs = r.elements[3].integer;
  const auto& rows = r.elements[4].elements;
  for (std::size_t i = 0; i + 2 < rows.size(); i += 3) out.tenants.push_back({rows[i].str, rows[i + 1].integer, rows[i + 2].integer});
  out.repaired = r.elements[5].integer == 1;
  return out;
}

}  // namespace ojs::broker::governance
