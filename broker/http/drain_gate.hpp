// Draining (ojs-graceful-shutdown.md §9, docs/operations.md "Shutdown"): the broker
// stops taking new work (PUSH, batch PUSH, workflow creation, FETCH answer 503
// with Retry-After) while the requests in flight, ACKs, NACKs, heartbeats and reads
// go on. Entered by SIGTERM/SIGINT before the broker stops, or by an admin
// (POST /ojs/v1/admin/drain); health and readiness report it.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>

#include "broker/http/router.hpp"

namespace ojs::broker {

class DrainGate {
 public:
  void begin(std::int64_t now_ms) {
    bool expected = false;
    if (draining_.compare_exchange_strong(expected, true)) since_ms_ = now_ms;
  }
  void end() { draining_ = false; }
  bool draining() const { return draining_; }
  std::int64_t since_ms() const { return since_ms_; }
  void watch(const Router& router) { router_ = &router; }
  int in_flight() const { return router_ ? router_->in_flight() : 0; }  // requests being handled, the asking one included
  // A Router middleware: refuses the routes that start new work while draining.
  void check(const HttpRequest& request, const std::string& route) const;

 private:
  std::atomic<bool> draining_{false};
  std::atomic<std::int64_t> since_ms_{0};
  const Router* router_ = nullptr;
};

}  // namespace ojs::broker
