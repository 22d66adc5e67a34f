// GET /ojs/v1/queues, GET /ojs/v1/queues/{name}/stats, POST .../pause and .../resume.
#include "broker/api/api.hpp"
#include "broker/api/json_io.hpp"
#include "ojs/core/envelope.hpp"
#include "ojs/core/error.hpp"

namespace ojs::broker {

namespace {
std::string queue_param(const HttpRequest& r, JobStore& store) {
  const auto name = queue_name_param(r);
  if (!store.queue_exists(name)) throw OjsError(ErrorCode::not_found, "queue " + name + " not found", {{"queue", name}});
  return name;
}
}  // namespace

void register_queues_api(Router& router, ApiContext& ctx) {
  router.add("GET", "/ojs/v1/queues", [&ctx](const HttpRequest&) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& q : ctx.store.queues())
      list.push_back({{"name", q}, {"status", ctx.store.is_paused(q) ? "paused" : "active"}});
    return json_reply(200, {{"queues", list}, {"pagination", {{"total", list.size()}, {"limit", list.size()}, {"offset", 0}}}});
  });
  router.add("GET", "/ojs/v1/queues/{name}/stats", [&ctx](const HttpRequest& r) {
    const auto name = queue_param(r, ctx.store);
    nlohmann::json q = {{"name", name}, {"paused", ctx.store.is_paused(name)}};
    for (const auto& [k, v] : ctx.store.queue_counts(name)) q[k] = v;
    return json_reply(200, {{"queue", q}});
  });
  router.add("GET", "/ojs/v1/queues/{name}/diagnosis", [&ctx](const HttpRequest& r) {
    return json_reply(200, ctx.jobs.queue_diagnosis(queue_param(r, ctx.store)));
  });
  // Queues are created by PUSH and bounded by --max-queues; an admin deletes an empty one.
  router.add("DELETE", "/ojs/v1/admin/queues/{name}", [&ctx](const HttpRequest& r) {
    const auto name = queue_param(r, ctx.store);
    if (!ctx.store.delete_queue_if_empty(name))
      throw OjsError(ErrorCode::conflict, "queue " + name + " still holds jobs (waiting, active, scheduled or dead-lettered)",
                     {{"queue", name}, {"rule", "only an empty queue can be deleted"}});
    return json_reply(200, {{"queue", {{"name", name}, {"deleted", true}}}});
  });
  // Also under /ojs/v1/admin (ojs-admin-api.md §6.3), which answers name/paused top-level too.
  for (const std::string base : {"/ojs/v1/queues/{name}/", "/ojs/v1/admin/queues/{name}/"})
    for (const bool pause : {true, false}) {
      router.add("POST", base + (pause ? "pause" : "resume"), [&ctx, pause](const HttpRequest& r) {
        // A queue named here exists for pause/resume even before its first job:
        // pausing ahead of a rollout must work.
        const auto name = queue_name_param(r);
        ctx.jobs.admit_queue(name);  // within --max-queues
        ctx.store.register_queue(name);
        ctx.store.set_paused(name, pause);
        return json_reply(200, {{"queue", {{"name", name}, {"paused", pause}}}, {"name", name}, {"paused", pause}});
      });
    }
}

}  // namespace ojs::broker
