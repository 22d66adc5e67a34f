// Hold, release and update of a waiting job: POST /ojs/v1/jobs/{id}/hold,
// POST /ojs/v1/jobs/{id}/release, PATCH /ojs/v1/jobs/{id}. Producers (of the job's
// tenant, when their token is pinned to one) and admins (broker/auth/roles.cpp).
#include "broker/api/api.hpp"
#include "broker/api/job_scope.hpp"
#include "broker/api/json_io.hpp"
#include "broker/auth/identity.hpp"
#include "broker/jobs/job_control.hpp"

namespace ojs::broker {

void register_job_control_api(Router& router, ApiContext& ctx, JobControl& control) {
  router.add("POST", "/ojs/v1/jobs/{id}/hold", [&ctx, &control](const HttpRequest& r) {
    require_in_tenant_scope(ctx, job_id_param(r));
    return json_reply(200, {{"job", control.hold(job_id_param(r), auth::current_caller_name("anonymous"))}});
  });
  router.add("POST", "/ojs/v1/jobs/{id}/release", [&ctx, &control](const HttpRequest& r) {
    require_in_tenant_scope(ctx, job_id_param(r));
    return json_reply(200, {{"job", control.release(job_id_param(r), auth::current_caller_name("anonymous"))}});
  });
  router.add("PATCH", "/ojs/v1/jobs/{id}", [&ctx, &control](const HttpRequest& r) {
    require_in_tenant_scope(ctx, job_id_param(r));
    return json_reply(200, {{"job", control.update(job_id_param(r), parse_json_body(r))}});
  });
}

}  // namespace ojs::broker
