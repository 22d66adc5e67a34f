// Wires the broker together: store, services, API routes, HTTP server and the
// background loop. main() only parses flags and waits for a signal.
#pragma once
#include <memory>

#include "broker/config.hpp"
#include "broker/cron/cron_limits.hpp"
#include "broker/webhooks/webhook_settings.hpp"

namespace ojs::broker {

class BrokerApp {
 public:
  explicit BrokerApp(BrokerConfig config, CronLimits crons = {}, webhooks::WebhookSettings hooks = {});
  ~BrokerApp();
  void start();  // throws on failure to start Redis or bind the port
  void begin_drain();    // stop accepting connections and new work (PUSH, FETCH: 503); the rest goes on
  int in_flight() const;  // requests being handled now
  void stop();
  std::uint16_t port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ojs::broker
