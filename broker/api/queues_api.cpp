// GET /ojs/v1/queues, GET /ojs/v1/queues/{name}/stats and .../diagnosis, POST
// .../pause and .../resume, DELETE /ojs/v1/admin/queues/{name}; over QueueService.
// Three documents read these replies: the OpenAPI (`queue{name, paused, counts}`),
// ojs-http-binding.md §11.2/§11.3 (`status`, `stats{...}`, `paused_at`) and
// ojs-backpressure.md §8 (`stats{queue, depth, max_depth}`). Their keys do not
// collide except `queue`, where the OpenAPI's object wins; every other key of each
// is answered at once, so a client of any one of them reads its own shape.
#include "broker/api/api.hpp"
#include "broker/api/json_io.hpp"
#include "broker/governance/queue_configs.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker {

namespace {
// The {name} parameter of a queue that must exist (400 when malformed, 404 when unknown).
std::string queue_param(const HttpRequest& r, QueueService& queues) {
  const auto name = queue_name_param(r);
  queues.require(name);
  return name;
}

// ojs-backpressure.md: a queue's depth is its non-terminal jobs not yet running.
long long queue_depth(const std::map<std::string, long long>& counts) {
  long long depth = 0;
  for (const char* state : {"available", "scheduled", "retryable", "pending"})
    if (const auto it = counts.find(state); it != counts.end()) depth += it->second;
  return depth;
}
}  // namespace

void register_queues_api(Router& router, ApiContext& ctx, governance::QueueConfigs& configs) {
  router.add("GET", "/ojs/v1/queues", [&ctx](const HttpRequest&) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& q : ctx.queues.names())
      list.push_back({{"name", q}, {"status", ctx.queues.paused(q) ? "paused" : "active"}});
    return json_reply(200, {{"queues", list}, {"pagination", {{"total", list.size()}, {"limit", list.size()}, {"offset", 0}}}});
  });
  // OpenAPI QueueStatsResponse {queue{name, paused, counts}}, and http-binding §11.2's
  // {status, stats, computed_at} with backpressure's stats{queue, depth, max_depth}.
  // Also GET /ojs/v1/queues/{name} (ext-multi-tenancy reads one queue there).
  for (const std::string path : {"/ojs/v1/queues/{name}/stats", "/ojs/v1/queues/{name}"})
    router.add("GET", path, [&ctx, &configs](const HttpRequest& r) {
      const auto state = ctx.queues.state(queue_param(r, ctx.queues));
      const char* status = state.paused ? "paused" : "active";
      nlohmann::json queue = {{"name", state.name}, {"paused", state.paused}, {"status", status}};
      nlohmann::json stats = nlohmann::json::object();
      for (const auto& [k, v] : state.counts) queue[k] = stats[k] = v;
      stats["queue"] = state.name;
      stats["depth"] = queue_depth(state.counts);
      if (const auto bound = configs.fresh(state.name)->backpressure.max_depth) stats["max_depth"] = *bound;
      return json_reply(200, {{"queue", queue},
                              {"status", status},
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
  // Also under /ojs/v1/admin (ojs-admin-api.md §6.3). One reply for three documents:
  // the OpenAPI's {queue{name, paused}}, http-binding §11.3's {status, paused_at} and
  // admin §6.3's {name, paused, paused_at}.
  for (const std::string base : {"/ojs/v1/queues/{name}/", "/ojs/v1/admin/queues/{name}/"})
    for (const bool pause : {true, false}) {
      router.add("POST", base + (pause ? "pause" : "resume"), [&ctx, pause](const HttpRequest& r) {
        const auto name = queue_name_param(r);
        const auto since = ctx.queues.set_paused(name, pause);  // creates the queue when new (QueueService)
        const auto paused_at = since ? nlohmann::json(format_rfc3339(*since)) : nlohmann::json(nullptr);
        const char* status = pause ? "paused" : "active";
        return json_reply(200, {{"queue", {{"name", name}, {"paused", pause}, {"status", status}, {"paused_at", paused_at}}},
                                {"status", status},
                                {"paused_at", paused_at},
                                {"name", name},
                                {"paused", pause}});
      });
    }
}

}  // namespace ojs::broker
