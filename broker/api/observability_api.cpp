// GET /metrics (Prometheus text), GET /ojs/v1/admin/overview (JSON) and
// GET /ojs/status (HTML). All read-only; see docs/operations.md.
#include "broker/api/api.hpp"
#include "broker/api/json_io.hpp"
#include "broker/observability/metrics.hpp"
#include "broker/observability/overview.hpp"
#include "broker/store/store_error.hpp"

namespace ojs::broker {

void register_observability_api(Router& router, ApiContext& api) {
  const obs::OverviewSources ctx{api.config, api.jobs, api.store, api.workers};
  router.observe([](const std::string& method, const std::string& route, int status, double seconds) {
    obs::Metrics::global().record_request(method, route, status, seconds);
  });

  router.add("GET", "/metrics", [ctx](const HttpRequest&) {
    obs::Exposition out;
    obs::Metrics::global().render(out);
    // Cluster gauges come from Redis; when it is down the process metrics still answer.
    bool redis_up = true;
    try {
      obs::render_cluster_metrics(obs::build_overview(ctx), out);
    } catch (const StoreUnavailable&) {
      redis_up = false;
    }
    out.family("ojs_redis_up", "gauge", "1 when this broker could read the cluster state from Redis for this scrape");
    out.sample("ojs_redis_up", {}, redis_up ? 1 : 0);
    HttpResponse r;
    r.body = out.text();
    r.content_type = obs::kExpositionContentType;
    return r;
  });

  router.add("GET", "/ojs/v1/admin/overview", [ctx](const HttpRequest&) { return json_reply(200, obs::build_overview(ctx)); });

  router.add("GET", "/ojs/status", [ctx](const HttpRequest&) {
    HttpResponse r;
    r.body = obs::render_status_page(obs::build_overview(ctx));
    r.content_type = "text/html; charset=utf-8";
    r.headers.emplace_back("Cache-Control", "no-store");
    return r;
  });
}

}  // namespace ojs::broker
