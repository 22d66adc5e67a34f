// GET /ojs/v1/queues, GET /ojs/v1/queues/{name}/stats and .../diagnosis, POST
// .../pause and .../resume, DELETE /ojs/v1/admin/queues/{name}; over QueueService.
#include "broker/api/api.hpp"
#include "broker/api/json_io.hpp"

namespace ojs::broker {

namespace {
// The {name} parameter of a queue that must exist (400 when malformed, 404 when unknown).
std::string queue_param(const HttpRequest& r, QueueService& queues) {
  const auto name = queue_name_param(r);
  queues.require(name);
  return name;
}
}  // namespace

void register_queues_api(Router& router, ApiContext& ctx) {
  router.add("GET", "/ojs/v1/queues", [&ctx](const HttpRequest&) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& q : ctx.queues.names())
      list.push_back({{"name", q}, {"status", ctx.queues.paused(q) ? "paused" : "active"}});
    return json_reply(200, {{"queues", list}, {"pagination", {{"total", list.size()}, {"limit", list.size()}, {"offset", 0}}}});
  });
  router.add("GET", "/ojs/v1/queues/{name}/stats", [&ctx](const HttpRequest& r) {
    const auto state = ctx.queues.state(queue_param(r, ctx.queues));
    nlohmann::json q = {{"name", state.name}, {"paused", state.paused}};
    for (const auto& [k, v] : state.counts) q[k] = v;
    return json_reply(200, {{"queue", q}});
  });
  router.add("GET", "/ojs/v1/queues/{name}/diagnosis", [&ctx](const HttpRequest& r) {
    return json_reply(200, ctx.jobs.queue_diagnosis(queue_param(r, ctx.queues)));
  });
  // Queues are created by PUSH and bounded by --max-queues; an admin deletes an empty one.
  router.add("DELETE", "/ojs/v1/admin/queues/{name}", [&ctx](const HttpRequest& r) {
    const auto name = queue_name_param(r);
    ctx.queues.remove(name);
    return json_reply(200, {{"queue", {{"name", name}, {"deleted", true}}}});
  });
  // Also under /ojs/v1/admin (ojs-admin-api.md §6.3), which answers name/paused top-level too.
  for (const std::string base : {"/ojs/v1/queues/{name}/", "/ojs/v1/admin/queues/{name}/"})
    for (const bool pause : {true, false}) {
      router.add("POST", base + (pause ? "pause" : "resume"), [&ctx, pause](const HttpRequest& r) {
        const auto name = queue_name_param(r);
        ctx.queues.set_paused(name, pause);  // creates the queue when new (QueueService)
        return json_reply(200, {{"queue", {{"name", name}, {"paused", pause}}}, {"name", name}, {"paused", pause}});
      });
    }
}

}  // namespace ojs::broker
