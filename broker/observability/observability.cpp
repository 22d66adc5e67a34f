#include "broker/observability/observability.hpp"

#include <chrono>

#include "ojs/core/error.hpp"

namespace ojs::broker::obs {

std::string Observability::metrics() {
  Exposition out;
  Metrics::global().render(out);
  bool redis_up = true;
  try {
    render_cluster_metrics(overview(), out);
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
  health.up = sources_.store.reachable();
  if (health.up) health.write_refusal = sources_.store.write_refusal();
  health.latency_ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - begin).count();
  health.where = sources_.store.where();
  return health;
}

}  // namespace ojs::broker::obs
