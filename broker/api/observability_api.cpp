// GET /metrics (Prometheus text), GET /ojs/v1/admin/overview (JSON) and
// GET /ojs/status (HTML). All read-only; see docs/operations.md.
#include "broker/api/api.hpp"
#include "broker/api/json_io.hpp"
#include "broker/observability/metrics.hpp"
#include "broker/observability/observability.hpp"

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

  router.add("GET", "/ojs/status", [&observability](const HttpRequest&) {
    HttpResponse r;
    r.body = obs::render_status_page(observability.overview());
    r.content_type = "text/html; charset=utf-8";
    r.headers.emplace_back("Cache-Control", "no-store");
    return r;
  });
}

}  // namespace ojs::broker
