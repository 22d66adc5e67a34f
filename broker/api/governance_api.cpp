// Queue governance for admins: configuration (defaults, limits, budgets, tenant
// quotas), the GPU ledger, its reconciliation, and the jobs of a queue by state.
#include "broker/admin/job_listing.hpp"
#include "broker/api/api.hpp"
#include "broker/api/json_io.hpp"
#include "broker/governance/queue_configs.hpp"
#include "ojs/core/envelope.hpp"
#include "ojs/core/error.hpp"

namespace ojs::broker {

using nlohmann::json;

namespace {

// The version the writer read: body "expected_version" (the schema checked it in
// parse_queue_config), else an If-Match header ("3" or 3).
std::optional<long long> expected_version(const json& body, const HttpRequest& r) {
  if (body.contains("expected_version")) return body["expected_version"].get<long long>();
  std::string tag = r.header("if-match");
  if (tag.empty() || tag == "*") return std::nullopt;
  if (tag.size() >= 2 && tag.front() == '"' && tag.back() == '"') tag = tag.substr(1, tag.size() - 2);
  try {
    std::size_t used = 0;
    const long long v = std::stoll(tag, &used);
    if (used == tag.size() && v >= 0) return v;
  } catch (const std::exception&) {
  }
  throw invalid_field("If-Match", "must be the configuration version, e.g. \"3\"");
}

HttpResponse config_reply(const json& config) {
  HttpResponse response = json_reply(200, {{"config", config}});
  response.headers.emplace_back("ETag", "\"" + std::to_string(config["version"].get<long long>()) + "\"");
  return response;
}

}  // namespace

void register_governance_api(Router& router, ApiContext& ctx, governance::QueueConfigs& configs) {
  const std::string base = "/ojs/v1/admin/queues/{name}/";
  router.add("GET", base + "config", [&configs](const HttpRequest& r) {
    const auto queue = queue_name_param(r);
    return config_reply(governance::to_json(configs.load(queue), queue));
  });
  router.add("PUT", base + "config", [&configs](const HttpRequest& r) {
    const auto queue = queue_name_param(r);
    const json body = parse_json_body(r);
    const auto config = governance::parse_queue_config(body);
    configs.save(queue, config, expected_version(body, r));
    return config_reply(governance::to_json(configs.load(queue), queue));
  });
  // ojs-rate-limiting.md §7.2: the queue's rate limit alone (the same field as config.rate_limit).
  router.add("GET", base + "rate-limit", [&configs](const HttpRequest& r) {
    const auto queue = queue_name_param(r);
    return json_reply(200, {{"rate_limit", governance::rate_limit_to_json(configs.load(queue).rate_limit)}, {"queue", queue}});
  });
  router.add("PUT", base + "rate-limit", [&configs](const HttpRequest& r) {
    const auto queue = queue_name_param(r);
    auto config = configs.load(queue);
    config.rate_limit = governance::parse_rate_limit(parse_json_body(r), "");
    configs.save(queue, config, config.version);  // compare-and-set: a concurrent config write answers 409
    return json_reply(200, {{"rate_limit", governance::rate_limit_to_json(configs.load(queue).rate_limit)}, {"queue", queue}});
  });
  router.add("GET", base + "budget", [&configs](const HttpRequest& r) {
    return json_reply(200, {{"budget", configs.budget(queue_name_param(r))}});
  });
  for (const bool repair : {false, true}) {
    router.add(repair ? "POST" : "GET", base + "reconcile", [&configs, repair](const HttpRequest& r) {
      const auto queue = queue_name_param(r);
      return json_reply(200, {{"reconciliation", governance::to_json(configs.reconcile(queue, repair), queue)}});
    });
  }
  router.add("GET", base + "jobs", [&ctx](const HttpRequest& r) {
    const auto queue = queue_name_param(r);
    const auto state = r.query_or("state", "available");
    if (!admin::is_listable_state(state)) throw invalid_field("state", "must be one of available, active, scheduled, retryable, dead, completed, discarded, cancelled, pending");
    return json_reply(200, admin::list_jobs(ctx.admin.listing, queue, state, int_query(r, "limit", 50, 1, 1000)));
  });
}

}  // namespace ojs::broker
