// GET /metrics (Prometheus text), GET /ojs/v1/admin/overview (JSON) and
// GET /ojs/status (HTML). All read-only; see docs/operations.md.
#include "broker/api/api.hpp"
#include "broker/api/json_io.hpp"
#include "broker/observability/metrics.hpp"
#include "broker/observability/observability.hpp"
#include "ojs/core/error.hpp"

namespace ojs::broker {

void register_observability_api(Router& router, obs::Observability& observability) {
  router.observe([](const std::string& method, const std::string& route, int status, double seconds) {
    obs::Metrics::global().record_request(method, route, status, seconds);
  });

  router.add("GET", "/metrics", [&observability](const HttpRequest&) {
    HttpResponse r;
    r.body = observability.metrics();
    r.content_type = obs::kExpositionContentType;
    return r;
  });

  router.add("GET", "/ojs/v1/admin/overview", [&observability](const HttpRequest&) { return json_reply(200, observability.overview()); });

  // ?workers=all|live|lost&page=&per_page= (1-500, 50): which workers, a page at a time.
  router.add("GET", "/ojs/status", [&observability](const HttpRequest& q) {
    obs::StatusPageView view;
    view.workers = q.query_or("workers", "all");
    if (view.workers != "all" && view.workers != "live" && view.workers != "lost")
      throw invalid_field("workers", "must be all, live or lost");
    view.page = int_query(q, "page", 1, 1, 1000000);
    view.per_page = int_query(q, "per_page", 50, 1, 500);
    HttpResponse r;
    r.body = obs::render_status_page(observability.overview(), view);
    r.content_type = "text/html; charset=utf-8";
    r.headers.emplace_back("Cache-Control", "no-store");
    return r;
  });
}

}  // namespace ojs::broker
