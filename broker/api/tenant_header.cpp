#include "broker/api/tenant_header.hpp"

#include "broker/auth/identity.hpp"
#include "broker/governance/queue_config.hpp"
#include "ojs/core/error.hpp"

namespace ojs::broker {

nlohmann::json with_tenant_header(nlohmann::json job, const HttpRequest& request, const std::string& field_prefix) {
  const std::string tenant = request.header("x-ojs-tenant");
  if (tenant.empty() || !job.is_object()) return job;  // PUSH validation names a non-object job
  if (!governance::is_valid_tenant(tenant)) throw invalid_field("X-OJS-Tenant", "must be 1-64 of [A-Za-z0-9._-]");
  if (!job.contains("meta") || job["meta"].is_null()) job["meta"] = nlohmann::json::object();
  if (!job["meta"].is_object()) return job;  // PUSH validation names meta
  auto& meta = job["meta"];
  if (meta.contains("tenant_id") && meta["tenant_id"] != tenant)
    throw OjsError(ErrorCode::invalid_request, field_prefix + "meta.tenant_id conflicts with the X-OJS-Tenant header",
                   {{"field", field_prefix + "meta.tenant_id"}, {"rule", "must equal the X-OJS-Tenant header when both are sent"},
                    {"header", tenant}});
  meta["tenant_id"] = tenant;
  return job;
}

std::string request_tenant(const HttpRequest& request) {
  const std::string pinned = auth::tenant_scope();
  const std::string header = request.header("x-ojs-tenant");
  if (header.empty()) return pinned;
  if (!governance::is_valid_tenant(header)) throw invalid_field("X-OJS-Tenant", "must be 1-64 of [A-Za-z0-9._-]");
  if (!pinned.empty() && header != pinned)
    throw OjsError(ErrorCode::forbidden, "X-OJS-Tenant names another tenant than the token's",
                   {{"field", "X-OJS-Tenant"}, {"rule", "must name the token's own tenant"}});
  return header;
}

nlohmann::json with_tenant_header_on_batch(nlohmann::json body, const HttpRequest& request) {
  if (request.header("x-ojs-tenant").empty() || !body.is_object() || !body.contains("jobs") || !body["jobs"].is_array())
    return body;  // batch validation names a malformed body
  auto& jobs = body["jobs"];
  for (std::size_t i = 0; i < jobs.size(); ++i)
    jobs[i] = with_tenant_header(std::move(jobs[i]), request, "jobs[" + std::to_string(i) + "].");
  return body;
}

}  // namespace ojs::broker
