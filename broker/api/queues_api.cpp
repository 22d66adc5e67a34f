// GET /ojs/v1/queues, GET /ojs/v1/queues/{name}/stats and .../diagnosis, POST
// .../pause and .../resume, DELETE /ojs/v1/admin/queues/{name}; over QueueService.
// Before issue 28 stats answered {queue: {name, paused, counts...}} and pause/resume
// {queue: {name, paused}}: `queue` is now the name, as the spec has it.
#include "broker/api/api.hpp"
#include "broker/api/json_io.hpp"
#include "ojs/core/time.hpp"

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
  // ojs-http-binding.md §11.2: {queue, status, stats, computed_at}.
  router.add("GET", "/ojs/v1/queues/{name}/stats", [&ctx](const HttpRequest& r) {
    const auto state = ctx.queues.state(queue_param(r, ctx.queues));
    nlohmann::json stats = nlohmann::json::object();
    for (const auto& [k, v] : state.counts) stats[k] = v;
    return json_reply(200, {{"queue", state.name},
                            {"status", state.paused ? "paused" : "active"},
                            {"paused", state.paused},
                            {"stats", stats},
                            {"computed_at", format_rfc3339(now_ms())}});
  });
  router.add("GET", "/ojs/v1/queues/{name}/diagnosis", [&ctx](const HttpRequest& r) {
    return json_reply(200, ctx.views.queue_diagnosis(queue_param(r, ctx.queues)));
  });
  // Queues are created by PUSH and bounded by --max-queues; an admin deletes an empty one.
  router.add("DELETE", "/ojs/v1/admin/queues/{name}", [&ctx](const HttpRequest& r) {
    const auto name = queue_name_param(r);
    ctx.queues.remove(name);
    return json_reply(200, {{"queue", {{"name", name}, {"deleted", true}}}});
  });
  // Also under /ojs/v1/admin (ojs-admin-api.md §6.3). One reply for both documents:
  // http-binding §11.3's {queue, status, paused_at} and admin §6.3's {name, paused, paused_at}.
  for (const std::string base : {"/ojs/v1/queues/{name}/", "/ojs/v1/admin/queues/{name}/"})
    for (const bool pause : {true, false}) {
      router.add("POST", base + (pause ? "pause" : "resume"), [&ctx, pause](const HttpRequest& r) {
        const auto name = queue_name_param(r);
        const auto since = ctx.queues.set_paused(name, pause);  // creates the queue when new (QueueService)
        return json_reply(200, {{"queue", name},
                                {"status", pause ? "paused" : "active"},
                                {"paused_at", since ? nlohmann::json(format_rfc3339(*since)) : nlohmann::json(nullptr)},
                                {"name", name},
                                {"paused", pause}});
      });
    }
}

}  // namespace ojs::broker
