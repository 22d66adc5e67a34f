// Progress: POST /ojs/v1/workers/progress (SDK workers), PUT and GET
// /ojs/v1/jobs/{id}/progress (spec/ojs-progress.md section 10).
#include "broker/api/api.hpp"
#include "broker/api/job_scope.hpp"
#include "broker/api/json_io.hpp"
#include "broker/auth/identity.hpp"
#include "broker/progress/progress_service.hpp"
#include "ojs/core/error.hpp"

namespace ojs::broker {

namespace {

// A report is a worker call: a bound token names one of its own workers (403
// otherwise), and a tenant-pinned token reaches only its tenant's jobs (404).
nlohmann::json report(ApiContext& ctx, const std::string& job_id, const nlohmann::json& body) {
  const bool named = body.is_object() && body.contains("worker_id") && body["worker_id"].is_string();
  auth::authorize_worker_id(named ? body["worker_id"].get<std::string>() : std::string());
  require_in_tenant_scope(ctx, job_id);
  return report_progress(ctx.progress, job_id, body, ctx.config.default_visibility_timeout_ms);
}

}  // namespace

void register_progress_api(Router& router, ApiContext& ctx) {
  router.add("POST", "/ojs/v1/workers/progress", [&ctx](const HttpRequest& r) {
    const auto body = parse_json_body(r);
    if (!body.is_object() || !body.contains("job_id") || !body["job_id"].is_string() || body["job_id"].get<std::string>().empty())
      throw invalid_field("job_id", "is required: the id of the active job");
    return json_reply(200, report(ctx, body["job_id"].get<std::string>(), body));
  });
  router.add("PUT", "/ojs/v1/jobs/{id}/progress", [&ctx](const HttpRequest& r) {
    return json_reply(200, report(ctx, job_id_param(r), parse_json_body(r)));
  });
  router.add("GET", "/ojs/v1/jobs/{id}/progress", [&ctx](const HttpRequest& r) {
    require_in_tenant_scope(ctx, job_id_param(r));
    return json_reply(200, read_progress(ctx.progress, job_id_param(r)));
  });
}

}  // namespace ojs::broker
