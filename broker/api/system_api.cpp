// GET /ojs/manifest, GET /ojs/v1/health, GET /ojs/v1/ready and /ojs/v1/admin/drain.
#include <chrono>

#include "broker/api/api.hpp"
#include "broker/api/json_io.hpp"
#include "broker/observability/observability.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker {

void register_system_api(Router& router, ApiContext& ctx, obs::Observability& observability) {
  router.add("GET", "/ojs/manifest", [](const HttpRequest&) {
    return json_reply(200, {
        {"specversion", "1.0"},
        {"implementation", {{"name", "ojs-gpu-broker"}, {"version", "0.1.0"}, {"language", "cpp"}, {"backend", "redis"}}},
        {"conformance_level", 3},  // levels 0-3 pass the public cases (tests/integration/conformance_test.cpp)
        {"protocols", {"http"}},
        {"backend", "redis"},
        {"capabilities", {{"batch_enqueue", true}, {"dead_letter", true}, {"events", true}, {"pause_resume", true},
                          {"heartbeat", true}, {"visibility_timeout", true}, {"scheduled_jobs", true},
                          {"delayed_jobs", true}, {"unique_jobs", true}, {"cron_jobs", true},
                          {"job_ttl", true}, {"workflows", true}}},
        // Exactly the extensions implemented (docs/spec-status.md says why the others are not).
        {"extensions", {{"official", {{{"name", "ml-resources"},
                                        {"uri", "https://openjobspec.org/spec/extensions/ml-resources"},
                                        {"version", "1.0"}},
                                       {{"name", "admin-api"}, {"uri", "urn:ojs:ext:admin-api"}, {"version", "1.0.0"}},
                                       {{"name", "backpressure"}, {"uri", "urn:ojs:ext:backpressure"}, {"version", "1.0.0-rc.1"}},
                                       {{"name", "durable-execution"}, {"uri", "urn:ojs:ext:durable-execution"}, {"version", "1.0.0-rc.1"}}}}}},
    });
  });

  // ojs-observability.md §10.1's vocabulary (level 0 accepts it too): healthy 200;
  // unhealthy 503 when Redis cannot be reached or refuses writes; draining while the broker shuts down
  // or an admin drained it (ojs-disaster-recovery.md: "draining"), still 200: the
  // process is alive, and a liveness probe must not kill it mid-drain. Readiness
  // (below) is what turns traffic away.
  // Also at /health (ext-observability's probe path, as orchestrators call it).
  for (const std::string path : {"/ojs/v1/health", "/health"})
    router.add("GET", path, [&ctx, &observability](const HttpRequest&) {
      const auto health = observability.backend();
      // Healthy means able to serve: a Redis that answers PING but refuses every
      // write (OOM under maxmemory, READONLY) cannot take a job or a transition.
      const bool up = health.up && health.write_refusal.empty();
      const bool draining = ctx.drain.draining();
      const auto uptime = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - ctx.started_at).count();
      nlohmann::json backend = {{"type", "redis"},
                                {"status", !health.up ? "disconnected" : up ? "connected" : "refusing_writes"},
                                {"latency_ms", health.latency_ms}};
      if (!health.up) backend["error"] = "cannot reach Redis at " + health.where;
      else if (!up) backend["error"] = health.write_refusal;
      return json_reply(up ? 200 : 503, {{"status", !up ? "unhealthy" : draining ? "draining" : "healthy"},
                                         {"version", "1.0"},
                                         {"uptime_seconds", uptime},
                                         {"server_time", format_rfc3339(now_ms())},
                                         {"backend", backend}});
    });

  // Readiness (ojs-graceful-shutdown.md §8.1, GS-R004): whether this broker takes new
  // work now. 503 while draining or while Redis cannot be reached.
  for (const std::string path : {"/ojs/v1/ready", "/ready"})  // /ready: as /health
    router.add("GET", path, [&ctx, &observability](const HttpRequest&) {
      const auto health = observability.backend();
      const bool up = health.up && health.write_refusal.empty();
      const bool draining = ctx.drain.draining();
      const bool ready = up && !draining;
      const char* backend = !health.up ? "disconnected" : up ? "connected" : "refusing_writes";
      return json_reply(ready ? 200 : 503, {{"status", ready ? "ready" : draining ? "draining" : "not_ready"},
                                            {"checks", {{"backend", backend}, {"draining", draining}}}});
    });

  // The drain switch: POST drains this broker (no new PUSH or FETCH: 503; ACK, NACK,
  // heartbeats, reads go on), as SIGTERM does before stopping; DELETE takes work again.
  const auto drain_reply = [&ctx] {
    nlohmann::json out = {{"status", ctx.drain.draining() ? "draining" : "running"}, {"draining", ctx.drain.draining()},
                          {"in_flight", ctx.drain.in_flight()}};
    if (ctx.drain.draining()) out["since"] = format_rfc3339(ctx.drain.since_ms());
    return json_reply(200, out);
  };
  router.add("GET", "/ojs/v1/admin/drain", [drain_reply](const HttpRequest&) { return drain_reply(); });
  router.add("POST", "/ojs/v1/admin/drain", [&ctx, drain_reply](const HttpRequest&) {
    ctx.drain.begin(now_ms());
    return drain_reply();
  });
  router.add("DELETE", "/ojs/v1/admin/drain", [&ctx, drain_reply](const HttpRequest&) {
    ctx.drain.end();
    return drain_reply();
  });
}

}  // namespace ojs::broker
