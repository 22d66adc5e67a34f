// Tenants for admins (ojs-multi-tenancy.md §10.1-10.2): GET /ojs/v1/admin/tenants
// lists the tenants seen in the queues' jobs or named in a queue's tenant quotas,
// with their counts; GET /ojs/v1/admin/tenants/{id} and .../stats give one tenant.
#include "broker/admin/tenant_stats.hpp"
#include "broker/api/api.hpp"
#include "broker/api/json_io.hpp"
#include "broker/governance/queue_config.hpp"
#include "broker/governance/queue_configs.hpp"
#include "ojs/core/error.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker {

using nlohmann::json;

namespace {

// The tenant's GPU quota and use per queue (MT-003's limit as this broker has it).
json tenant_limits(ApiContext& ctx, governance::QueueConfigs& configs, const std::string& tenant) {
  json gpus = json::object();
  for (const auto& queue : ctx.queues.names()) {
    const auto budget = configs.budget(queue);
    if (budget["tenants"].contains(tenant)) gpus[queue] = budget["tenants"][tenant];
    else if (budget.contains("default_tenant_max_gpus")) gpus[queue] = {{"max_gpus", budget["default_tenant_max_gpus"]}, {"gpus_in_use", 0}};
  }
  return {{"gpus", gpus}};
}

json one_tenant(ApiContext& ctx, governance::QueueConfigs& configs, const std::string& tenant) {
  if (!governance::is_valid_tenant(tenant)) throw invalid_field("id", "must be a tenant name: 1-64 of A-Z a-z 0-9 . _ -");
  const auto scan = admin::scan_tenants(ctx.admin.tenants, ctx.queues);
  const auto it = scan.tenants.find(tenant);
  json out = admin::tenant_json(tenant, it == scan.tenants.end() ? admin::TenantCounts{} : it->second);
  out["limits"] = tenant_limits(ctx, configs, tenant);
  out["truncated"] = scan.truncated;
  out["computed_at"] = format_rfc3339(now_ms());
  return out;
}

}  // namespace

void register_tenants_api(Router& router, ApiContext& ctx, governance::QueueConfigs& configs) {
  router.add("GET", "/ojs/v1/admin/tenants", [&ctx, &configs](const HttpRequest&) {
    const auto scan = admin::scan_tenants(ctx.admin.tenants, ctx.queues);
    std::map<std::string, admin::TenantCounts> tenants;
    for (const auto& [tenant, counts] : scan.tenants)
      if (!tenant.empty()) tenants[tenant] = counts;
    for (const auto& queue : ctx.queues.names()) {  // tenants with a quota and no job yet
      const json budget = configs.budget(queue);
      for (const auto& [tenant, _] : budget["tenants"].items()) tenants.emplace(tenant, admin::TenantCounts{});
    }
    json items = json::array();
    for (const auto& [tenant, counts] : tenants) items.push_back(admin::tenant_json(tenant, counts));
    const auto untagged = scan.tenants.find("");
    json out = {{"tenants", items}, {"items", items}, {"count", items.size()}, {"truncated", scan.truncated}};
    out["untagged"] = admin::tenant_json("", untagged == scan.tenants.end() ? admin::TenantCounts{} : untagged->second)["jobs"];
    return json_reply(200, out);
  });
  for (const std::string suffix : {"", "/stats"}) {
    router.add("GET", "/ojs/v1/admin/tenants/{id}" + suffix,
               [&ctx, &configs](const HttpRequest& r) { return json_reply(200, one_tenant(ctx, configs, r.params.at("id"))); });
  }
}

}  // namespace ojs::broker
