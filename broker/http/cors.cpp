#include "broker/http/cors.hpp"

#include <algorithm>

namespace ojs::broker {

namespace {
// §20.2's values, plus what this broker's own endpoints use: PUT (queue config,
// progress), PATCH (job update), If-Match (config writes), X-OJS-Tenant, OJS-Block-Timeout (backpressure),
// Last-Event-ID (SSE), Idempotency-Key (PUSH); the backpressure, ETag and replay headers are exposed too.
constexpr const char* kMethods = "GET, POST, PUT, PATCH, DELETE, OPTIONS";
constexpr const char* kHeaders =
    "Content-Type, Accept, Authorization, X-Request-Id, OJS-Version, X-OJS-Tenant, If-Match, OJS-Block-Timeout, Last-Event-ID, Idempotency-Key";
constexpr const char* kExposed =
    "X-Request-Id, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, OJS-Version, Retry-After, "
    "X-OJS-Queue-Depth, X-OJS-Queue-Bound, X-OJS-Queue-Pressure, ETag, Location, Idempotent-Replayed";
constexpr const char* kMaxAge = "86400";  // §20.2: 24 hours
}  // namespace

bool is_valid_origin(const std::string& origin) {
  const auto scheme = origin.find("://");
  if (scheme == std::string::npos || scheme == 0 || origin.size() == scheme + 3) return false;
  const auto host = origin.substr(scheme + 3);
  return std::all_of(origin.begin(), origin.begin() + scheme, [](char c) { return std::isalpha(static_cast<unsigned char>(c)); }) &&
         std::all_of(host.begin(), host.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == ':' || c == '[' || c == ']';
         });
}

CorsPolicy::CorsPolicy(std::vector<std::string> origins) : origins_(std::move(origins)) {}

bool CorsPolicy::allows(const std::string& origin) const {
  return !origin.empty() && std::find(origins_.begin(), origins_.end(), origin) != origins_.end();
}

void CorsPolicy::decorate(const HttpRequest& request, HttpResponse& response) const {
  if (!enabled()) return;
  response.headers.emplace_back("Vary", "Origin");  // the answer depends on the Origin: caches keep one per origin
  const auto origin = request.header("origin");
  if (!allows(origin)) return;
  response.headers.emplace_back("Access-Control-Allow-Origin", origin);
  response.headers.emplace_back("Access-Control-Expose-Headers", kExposed);
  if (request.method == "OPTIONS") {
    response.headers.emplace_back("Access-Control-Allow-Methods", kMethods);
    response.headers.emplace_back("Access-Control-Allow-Headers", kHeaders);
    response.headers.emplace_back("Access-Control-Max-Age", kMaxAge);
  }
}

}  // namespace ojs::broker
