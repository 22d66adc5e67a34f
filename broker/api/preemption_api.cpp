// Checkpoint commits (workers) and reservations (admin).
#include "broker/api/preemption_api.hpp"

#include "broker/api/api.hpp"
#include "broker/api/json_io.hpp"
#include "broker/auth/identity.hpp"
#include "broker/preemption/preemption.hpp"
#include "ojs/core/error.hpp"
#include "ojs/core/time.hpp"

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
  router.add("GET", "/ojs/v1/jobs/{id}/checkpoint", [&ctx](const HttpRequest& r) {
    const auto& id = r.params.at("id");
    auto job = ctx.store.get(id);
    const auto scope = auth::tenant_scope();  // another tenant's job is as absent as a missing one
    if (!job || (!scope.empty() && job->get("tenant") != scope))
      throw OjsError(ErrorCode::not_found, "job " + id + " not found", {{"job_id", id}});
    const auto envelope = job->envelope();
    return json_reply(200, {{"job_id", id},
                            {"last_checkpoint", envelope.value("last_checkpoint", nlohmann::json(nullptr))},
                            {"checkpoints", envelope.value("checkpoints", nlohmann::json::array())},
                            {"preemption_count", envelope.value("preemption_count", 0)}});
  });

  router.add("POST", "/ojs/v1/admin/reservations", [&ctx](const HttpRequest& r) {
    const auto reservation = Reservation::parse(parse_json_body(r), now_ms());
    ctx.store.preemption().put_reservation(reservation.id, reservation.to_json().dump());
    return json_reply(201, {{"reservation", reservation.to_json()}});
  });
  router.add("GET", "/ojs/v1/admin/reservations", [&ctx](const HttpRequest&) {
    nlohmann::json list = nlohmann::json::array();
    const auto now = now_ms();
    auto marks = ctx.store.preemption();
    for (const auto& [id, res] : load_reservations(marks)) {
      auto j = res.to_json();
      j["active"] = res.active(now);
      list.push_back(std::move(j));
    }
    return json_reply(200, {{"reservations", list}});
  });
  router.add("DELETE", "/ojs/v1/admin/reservations/{id}", [&ctx](const HttpRequest& r) {
    const auto& id = r.params.at("id");
    if (!ctx.store.preemption().delete_reservation(id))
      throw OjsError(ErrorCode::not_found, "reservation " + id + " not found", {{"reservation_id", id}});
    return json_reply(200, {{"deleted", true}, {"id", id}});
  });
}

}  // namespace ojs::broker
