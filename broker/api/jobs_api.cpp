// PUSH, INFO and CANCEL: POST /ojs/v1/jobs, GET and DELETE /ojs/v1/jobs/{id}.
#include "broker/api/api.hpp"
#include "broker/api/json_io.hpp"
#include "broker/auth/identity.hpp"
#include "broker/uniqueness/unique_push.hpp"
#include "broker/governance/queue_config.hpp"
#include "ojs/core/error.hpp"
#include "ojs/core/uuid.hpp"

namespace ojs::broker {

namespace {
// ojs-multi-tenancy.md §5.3: the X-OJS-Tenant header fills meta.tenant_id (where
// quotas and fair share read the tenant); a body naming another tenant is a 400.
nlohmann::json with_tenant_header(nlohmann::json body, const HttpRequest& r) {
  const std::string tenant = r.header("x-ojs-tenant");
  if (tenant.empty()) return body;
  if (!governance::is_valid_tenant(tenant)) throw invalid_field("X-OJS-Tenant", "must be 1-64 of [A-Za-z0-9._-]");
  if (!body.contains("meta") || body["meta"].is_null()) body["meta"] = nlohmann::json::object();
  if (!body["meta"].is_object()) return body;  // PUSH validation names meta
  auto& meta = body["meta"];
  if (meta.contains("tenant_id") && meta["tenant_id"] != tenant)
    throw OjsError(ErrorCode::invalid_request, "meta.tenant_id conflicts with the X-OJS-Tenant header",
                   {{"field", "meta.tenant_id"}, {"rule", "must equal the X-OJS-Tenant header when both are sent"},
                    {"header", tenant}});
  meta["tenant_id"] = tenant;
  return body;
}

const std::string& job_id_param(const HttpRequest& r) {
  const auto& id = r.params.at("id");
  if (!is_uuidv7(id)) throw invalid_field("id", "must be a lowercase UUIDv7 job id");
  return id;
}

// A tenant-pinned token sees and cancels only its tenant's jobs: another
// tenant's job answers 404, exactly as a missing one.
void require_in_tenant_scope(ApiContext& ctx, const std::string& id) {
  const auto scope = auth::tenant_scope();
  if (scope.empty()) return;
  const auto tenant = ctx.jobs.tenant_of(id);
  if (tenant && *tenant != scope) throw OjsError(ErrorCode::not_found, "job " + id + " not found", {{"job_id", id}});
}
}  // namespace

void register_jobs_api(Router& router, ApiContext& ctx) {
  router.add("POST", "/ojs/v1/jobs", [&ctx](const HttpRequest& r) {
    auto pushed = push_job(ctx.jobs, with_tenant_header(parse_json_body(r), r));  // unique policies included
    auto& job = pushed.job;
    // on_conflict "ignore": 200 with the existing job (spec/ojs-unique-jobs.md 5.4)
    if (pushed.deduplicated) return json_reply(200, {{"job", job}, {"deduplicated", true}});
    auto reply = json_reply(201, {{"job", job}});
    reply.headers.emplace_back("Location", "/ojs/v1/jobs/" + job["id"].get<std::string>());
    return reply;
  });
  router.add("GET", "/ojs/v1/jobs/{id}", [&ctx](const HttpRequest& r) {
    const auto& id = r.params.at("id");
    require_in_tenant_scope(ctx, id);
    return json_reply(200, {{"job", ctx.jobs.info(id)}});
  });
  router.add("GET", "/ojs/v1/jobs/{id}/diagnosis", [&ctx](const HttpRequest& r) {
    require_in_tenant_scope(ctx, job_id_param(r));
    return json_reply(200, {{"diagnosis", ctx.jobs.diagnosis(job_id_param(r))}});
  });
  router.add("DELETE", "/ojs/v1/jobs/{id}", [&ctx](const HttpRequest& r) {
    require_in_tenant_scope(ctx, job_id_param(r));
    return json_reply(200, {{"job", ctx.jobs.cancel(job_id_param(r))}});
  });
}

}  // namespace ojs::broker
