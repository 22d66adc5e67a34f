// POST /ojs/v1/jobs/{id}/what-if and GET /ojs/v1/queues/{name}/forecast
// over EstimateService; the job diagnosis's `estimate` is added in jobs_api.cpp.
#include "broker/api/api.hpp"
#include "broker/api/job_scope.hpp"
#include "broker/api/json_io.hpp"
#include "broker/auth/identity.hpp"
#include "broker/estimate/estimate_service.hpp"
#include "ojs/core/uuid.hpp"

namespace ojs::broker {

void register_estimate_api(Router& router, ApiContext& ctx, EstimateService& estimates) {
  router.add("POST", "/ojs/v1/jobs/{id}/what-if", [&ctx, &estimates](const HttpRequest& r) {
    const auto& id = job_id_param(r);
    require_in_tenant_scope(ctx, id);
    // A tenant-pinned caller ends only its tenant's jobs: another tenant's running job
    // is answered as an unknown one, so a what-if tells nothing of it.
    const auto visible = [&ctx](const std::string& job_id) {
      const auto scope = auth::tenant_scope();
      if (scope.empty() || !is_uuidv7(job_id)) return true;
      const auto tenant = ctx.views.tenant_of(job_id);
      return !tenant || *tenant == scope;
    };
    return json_reply(200, estimates.what_if(id, parse_json_body(r), visible));
  });
  router.add("GET", "/ojs/v1/queues/{name}/forecast", [&ctx, &estimates](const HttpRequest& r) {
    const auto name = queue_name_param(r);
    ctx.queues.require(name);
    const int limit = int_query(r, "limit", 10, 1, EstimateService::kMaxForecast);
    auto reply = estimates.forecast(name, limit);
    // A tenant-pinned caller sees the placements of its own tenant's jobs only.
    if (const auto scope = auth::tenant_scope(); !scope.empty()) {
      auto& placements = reply["forecast"]["placements"];
      nlohmann::json mine = nlohmann::json::array();
      for (auto& p : placements)
        if (p.value("tenant", std::string()) == scope) mine.push_back(std::move(p));
      placements = std::move(mine);
    }
    return json_reply(200, reply);
  });
}

}  // namespace ojs::broker
