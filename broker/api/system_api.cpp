// GET /ojs/manifest and GET /ojs/v1/health.
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
                                       {{"name", "admin-api"}, {"uri", "urn:ojs:ext:admin-api"}, {"version", "1.0.0"}}}}}},
    });
  });

  router.add("GET", "/ojs/v1/health", [&ctx, &observability](const HttpRequest&) {
    const auto health = observability.backend();
    // Healthy means able to serve: a Redis that answers PING but refuses every
    // write (OOM under maxmemory, READONLY) cannot take a job or a transition.
    const bool up = health.up && health.write_refusal.empty();
    const auto uptime = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - ctx.started_at).count();
    nlohmann::json backend = {{"type", "redis"},
                              {"status", !health.up ? "disconnected" : up ? "connected" : "refusing_writes"},
                              {"latency_ms", health.latency_ms}};
    if (!health.up) backend["error"] = "cannot reach Redis at " + health.where;
    else if (!up) backend["error"] = health.write_refusal;
    return json_reply(up ? 200 : 503, {{"status", up ? "ok" : "error"},
                                       {"version", "1.0"},
                                       {"uptime_seconds", uptime},
                                       {"server_time", format_rfc3339(now_ms())},
                                       {"backend", backend}});
  });
}

}  // namespace ojs::broker
