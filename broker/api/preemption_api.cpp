// Checkpoints (workers: the ML ones and durable-execution state) and reservations (admin).
#include "broker/api/preemption_api.hpp"

#include "broker/api/api.hpp"
#include "broker/api/json_io.hpp"
#include "broker/preemption/preemption.hpp"
#include "ojs/core/error.hpp"

namespace ojs::broker {

void register_preemption_api(Router& router, Checkpoints& checkpoints, Reservations& reservations) {
  router.add("POST", "/ojs/v1/jobs/{id}/checkpoint", [&checkpoints](const HttpRequest& r) {
    return json_reply(200, checkpoints.commit(r.params.at("id"), parse_json_body(r)));
  });
  // Alias used by the conformance runner's `checkpoint` action: the job id is in the body.
  router.add("POST", "/ojs/v1/workers/checkpoint", [&checkpoints](const HttpRequest& r) {
    const auto body = parse_json_body(r);
    if (!body.contains("job_id") || !body["job_id"].is_string()) throw invalid_field("job_id", "is required");
    return json_reply(200, checkpoints.commit(body["job_id"].get<std::string>(), body));
  });
  router.add("GET", "/ojs/v1/jobs/{id}/checkpoint",
             [&checkpoints](const HttpRequest& r) { return json_reply(200, checkpoints.read(r.params.at("id"))); });
  // ojs-durable-execution.md saves with POST (a body with `state`, above);
  // its conformance cases save with PUT: both are served.
  router.add("PUT", "/ojs/v1/jobs/{id}/checkpoint", [&checkpoints](const HttpRequest& r) {
    return json_reply(200, checkpoints.save_state(r.params.at("id"), parse_json_body(r)));
  });
  router.add("DELETE", "/ojs/v1/jobs/{id}/checkpoint",
             [&checkpoints](const HttpRequest& r) { return json_reply(200, checkpoints.delete_state(r.params.at("id"))); });

  router.add("POST", "/ojs/v1/admin/reservations", [&reservations](const HttpRequest& r) {
    return json_reply(201, {{"reservation", reservations.create(parse_json_body(r))}});
  });
  router.add("GET", "/ojs/v1/admin/reservations",
             [&reservations](const HttpRequest&) { return json_reply(200, {{"reservations", reservations.list()}}); });
  router.add("DELETE", "/ojs/v1/admin/reservations/{id}", [&reservations](const HttpRequest& r) {
    const auto& id = r.params.at("id");
    reservations.remove(id);
    return json_reply(200, {{"deleted", true}, {"id", id}});
  });
}

}  // namespace ojs::broker
