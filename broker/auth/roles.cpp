#include "broker/auth/roles.hpp"

#include <array>

namespace ojs::broker::auth {

namespace {

// A rule matches a route exactly, or as a prefix when it ends with '*'.
bool matches(std::string_view rule, std::string_view route) {
  if (!rule.empty() && rule.back() == '*') return route.substr(0, rule.size() - 1) == rule.substr(0, rule.size() - 1);
  return rule == route;
}

template <std::size_t N>
bool any_matches(const std::array<std::string_view, N>& rules, std::string_view route) {
  for (auto rule : rules)
    if (matches(rule, route)) return true;
  return false;
}

// Probes: health and readiness (orchestrators call them without a token).
constexpr std::array<std::string_view, 5> kPublic = {"GET /ojs/manifest", "GET /ojs/v1/health", "GET /ojs/v1/ready",
                                                     "GET /health", "GET /ready"};

// Producers submit, inspect, cancel, hold and update their jobs, read why they wait,
// and subscribe webhooks to their events.
constexpr std::array<std::string_view, 32> kProducer = {
    "POST /ojs/v1/jobs",          "GET /ojs/v1/jobs/{id}",         "DELETE /ojs/v1/jobs/{id}",
    "POST /ojs/v1/jobs/batch", "POST /ojs/v1/cron", "GET /ojs/v1/cron*", "DELETE /ojs/v1/cron/{name}",  // ecosystem
    "GET /ojs/v1/jobs/{id}/*",    "GET /ojs/v1/events",            "GET /ojs/v1/queues",
    "GET /ojs/v1/queues/{name}/stats", "GET /ojs/v1/queues/{name}", "GET /ojs/v1/queues/{name}/diagnosis",
    "GET /ojs/v1/rate-limits", "GET /ojs/v1/rate-limits/{key}",  // what throttles their queues
    "POST /ojs/v1/workflows", "GET /ojs/v1/workflows/{id}", "DELETE /ojs/v1/workflows/{id}",  // level 3
    "GET /ojs/v1/events/stream", "GET /ojs/v1/queues/{name}/events",  // server-sent events
    "POST /ojs/v1/jobs/{id}/hold", "POST /ojs/v1/jobs/{id}/release", "PATCH /ojs/v1/jobs/{id}",  // job control
    "POST /ojs/v1/jobs/{id}/what-if", "GET /ojs/v1/queues/{name}/forecast",  // start estimates
    // Webhook subscriptions of the producer's tenant (ojs-webhooks.md §9.3).
    "POST /ojs/v1/webhooks/*", "GET /ojs/v1/webhooks/*", "PATCH /ojs/v1/webhooks/*", "DELETE /ojs/v1/webhooks/*",
    // Their tenant's job-type schemas (ojs-schema-registry.md §4: producers register them).
    "POST /ojs/v1/schemas", "GET /ojs/v1/schemas/*", "DELETE /ojs/v1/schemas/*"};

// Workers run jobs: every worker-side operation (fetch, ack, nack, heartbeat and
// whatever else lives under /workers/, e.g. checkpoints; ack and nack by job path too), job checkpoints, INFO,
// and the schemas of what they run (ojs-schema-registry.md §1: discovery).
constexpr std::array<std::string_view, 9> kWorker = {"GET /ojs/v1/schemas/*","POST /ojs/v1/workers/*", "GET /ojs/v1/workers/{id}/health", "GET /ojs/v1/jobs/{id}",
                                                     "POST /ojs/v1/jobs/{id}/ack", "POST /ojs/v1/jobs/{id}/nack",  // the public suites' ACK and NACK
                                                     "POST /ojs/v1/jobs/{id}/checkpoint*", "GET /ojs/v1/jobs/{id}/checkpoint*",
                                                     "PUT /ojs/v1/jobs/{id}/progress"};  // ecosystem: progress

}  // namespace

std::optional<Role> parse_role(std::string_view name) {
  if (name == "producer") return Role::producer;
  if (name == "worker") return Role::worker;
  if (name == "admin") return Role::admin;
  return std::nullopt;
}

std::string_view to_string(Role role) {
  switch (role) {
    case Role::producer: return "producer";
    case Role::worker: return "worker";
    case Role::admin: return "admin";
  }
  return "unknown";
}

bool is_public_route(std::string_view route) { return any_matches(kPublic, route); }

bool roles_allow(const std::set<Role>& roles, std::string_view route) {
  if (is_public_route(route) || roles.count(Role::admin)) return true;
  if (roles.count(Role::producer) && any_matches(kProducer, route)) return true;
  if (roles.count(Role::worker) && any_matches(kWorker, route)) return true;
  return false;
}

}  // namespace ojs::broker::auth
