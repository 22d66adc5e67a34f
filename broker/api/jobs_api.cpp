// PUSH, INFO and CANCEL: POST /ojs/v1/jobs, GET and DELETE /ojs/v1/jobs/{id}.
#include "broker/api/api.hpp"
#include "broker/api/job_scope.hpp"
#include "broker/api/json_io.hpp"
#include "broker/api/tenant_header.hpp"
#include "broker/auth/identity.hpp"
#include "broker/uniqueness/unique_push.hpp"
#include "ojs/core/error.hpp"
#include "ojs/core/uuid.hpp"

namespace ojs::broker {

const std::string& job_id_param(const HttpRequest& r) {
  const auto& id = r.params.at("id");
  if (!is_uuidv7(id)) throw invalid_field("id", "must be a lowercase UUIDv7 job id");
  return id;
}

void require_in_tenant_scope(ApiContext& ctx, const std::string& id) {
  const auto scope = auth::tenant_scope();
  if (scope.empty()) return;
  const auto tenant = ctx.jobs.tenant_of(id);
  if (tenant && *tenant != scope) throw OjsError(ErrorCode::not_found, "job " + id + " not found", {{"job_id", id}});
}

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
