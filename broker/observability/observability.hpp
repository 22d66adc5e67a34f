// The observability service the HTTP API calls (/metrics, /ojs/status, the admin
// overview, /ojs/v1/health): it holds what the overview reads, so the API never
// names the store, and it decides what a scrape or a health check shows while
// Redis is away.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "broker/observability/overview.hpp"

namespace ojs::broker::obs {

// Whether Redis answers a PING, how long the check took, and where Redis is.
struct BackendHealth {
  bool up = false;
  std::int64_t latency_ms = 0;
  std::string where;  // the endpoint, for the error text of /health
  std::string write_refusal;  // up, but a write was refused (OOM, READONLY...): why
};

class Observability {
 public:
  explicit Observability(OverviewSources sources) : sources_(sources) {}

  nlohmann::json overview() { return build_overview(sources_); }
  // Prometheus text: this process's metrics, then the cluster gauges read from
  // Redis; when Redis is away the process metrics still answer, with ojs_redis_up 0.
  std::string metrics();
  BackendHealth backend();

 private:
  OverviewSources sources_;
};

}  // namespace ojs::broker::obs
