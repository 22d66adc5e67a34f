#include "broker/observability/observability.hpp"

#include <chrono>

#include "broker/store/usage_resources.hpp"
#include "broker/store/usage_store.hpp"
#include "ojs/core/error.hpp"

namespace ojs::broker::obs {

namespace {

// Resource-seconds that ended attempts used, from each queue's totals
// (never decayed, never trimmed: a counter), by queue, tenant ("" = none) and resource.
void render_usage_metrics(UsageStore& usage, QueueDirectory& queues, Exposition& out) {
  out.family("ojs_resource_seconds_total", "counter",
             "Resource-seconds used by ended attempts, by queue, tenant and resource (gpu, cpu, memory_gb, gpu_memory_gb)");
  for (const auto& t : usage.totals(queues.queues()))
    for (const auto& r : kUsageResources)
      if (t.resource == r.name)
        out.sample("ojs_resource_seconds_total", {{"queue", t.queue}, {"tenant", t.tenant}, {"resource", r.reported}},
                   static_cast<double>(t.microseconds) / r.per_unit);
}

}  // namespace

std::string Observability::metrics() {
  Exposition out;
  Metrics::global().render(out);
  bool redis_up = true;
  try {
    render_cluster_metrics(overview(), out);
    render_usage_metrics(sources_.usage, sources_.queues, out);
  } catch (const BackendUnavailable&) {
    redis_up = false;
  }
  out.family("ojs_redis_up", "gauge", "1 when this broker could read the cluster state from Redis for this scrape");
  out.sample("ojs_redis_up", {}, redis_up ? 1 : 0);
  return out.text();
}

BackendHealth Observability::backend() {
  const auto begin = std::chrono::steady_clock::now();
  BackendHealth health;
  health.up = sources_.health.reachable();
  if (health.up) health.write_refusal = sources_.health.write_refusal();
  health.latency_ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - begin).count();
  health.where = sources_.health.where();
  return health;
}

}  // namespace ojs::broker::obs
