// Checkpoint commits (workers) and reservations (admin).
#include "broker/api/preemption_api.hpp"

#include "broker/api/api.hpp"
#include "broker/api/json_io.hpp"
#include "broker/preemption/preemption.hpp"
#include "ojs/core/error.hpp"

namespace ojs::broker {

void register_preemption_api(Router& router, ApiContext& ctx) {
  router.add("POST", "/ojs/v1/jobs/{id}/checkpoint", [&ctx](const HttpRequest& r) {
    return json_reply(200, commit_checkpoint(ctx.store, r.params.at("id"), parse_json_body(r), ctx.config.checkpoint_prefixes));
  });
  // Alias used by the conformance runner's `checkpoint` action: the job id is in the body.
  router.add("POST", "/ojs/v1/workers/checkpoint", [&ctx](const HttpRequest& r) {
    const auto body = parse_json_body(r);
    if (!body.contains("job_id") || !body["job_id"].is_string()) throw invalid_field("job_id", "is required");
    return json_reply(200, commit_checkpoint(ctx.store, body["job_id"].get<std::string>(), body, ctx.config.checkpoint_prefixes));
  });
  router.add("GET", "/ojs/v1/jobs/{id}/checkpoint",
             [&ctx](const HttpRequest& r) { return json_reply(200, read_checkpoints(ctx.store, r.params.at("id"))); });

  router.add("POST", "/ojs/v1/admin/reservations", [&ctx](const HttpRequest& r) {
    auto marks = ctx.store.preemption();
    return json_reply(201, {{"reservation", create_reservation(marks, parse_json_body(r))}});
  });
  router.add("GET", "/ojs/v1/admin/reservations", [&ctx](const HttpRequest&) {
    auto marks = ctx.store.preemption();
    return json_reply(200, {{"reservations", list_reservations(marks)}});
  });
  router.add("DELETE", "/ojs/v1/admin/reservations/{id}", [&ctx](const HttpRequest& r) {
    const auto& id = r.params.at("id");
    auto marks = ctx.store.preemption();
    delete_reservation(marks, id);
    return json_reply(200, {{"deleted", true}, {"id", id}});
  });
}

}  // namespace ojs::broker
