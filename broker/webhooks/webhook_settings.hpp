// Webhook settings from the command line (docs/operations.md "Webhooks"): whether
// URLs may point at loopback, link-local, private or unspecified addresses (off:
// refused, the SSRF guard), the bounds on subscriptions, waiting deliveries and
// the log, and the retries. The wiring turns them into the dispatcher's and the
// service's options.
#pragma once
#include <cstddef>
#include <cstdint>

namespace ojs::broker::webhooks {

struct WebhookSettings {
  bool allow_private = false;
  long long max_subscriptions = 1000;
  std::size_t queue_size = 10000;
  int threads = 4;
  int max_attempts = 8;
  std::int64_t retry_base_ms = 30000;
  std::int64_t timeout_ms = 30000;
  std::size_t log_size = 100;
};

}  // namespace ojs::broker::webhooks
