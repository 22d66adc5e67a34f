// Progress: POST /ojs/v1/workers/progress (SDK workers), PUT and GET
// /ojs/v1/jobs/{id}/progress (spec/ojs-progress.md section 10).
#include "broker/api/api.hpp"
#include "broker/api/json_io.hpp"
#include "broker/progress/progress_service.hpp"
#include "ojs/core/error.hpp"

namespace ojs::broker {

void register_progress_api(Router& router, ApiContext& ctx) {
  router.add("POST", "/ojs/v1/workers/progress", [&ctx](const HttpRequest& r) {
    const auto body = parse_json_body(r);
    if (!body.contains("job_id") || !body["job_id"].is_string() || body["job_id"].get<std::string>().empty())
      throw invalid_field("job_id", "is required: the id of the active job");
    return json_reply(200, report_progress(ctx.jobs, body["job_id"].get<std::string>(), body, ctx.config.default_visibility_timeout_ms));
  });
  router.add("PUT", "/ojs/v1/jobs/{id}/progress", [&ctx](const HttpRequest& r) {
    return json_reply(200, report_progress(ctx.jobs, r.params.at("id"), parse_json_body(r), ctx.config.default_visibility_timeout_ms));
  });
  router.add("GET", "/ojs/v1/jobs/{id}/progress", [&ctx](const HttpRequest& r) {
    return json_reply(200, read_progress(ctx.jobs, r.params.at("id")));
  });
}

}  // namespace ojs::broker
