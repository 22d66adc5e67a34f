// Webhook delivery (ojs-webhooks.md §7, §8): the event hub's reader offers every job
// event; the ones an active subscription wants wait in a bounded queue, and a few
// sender threads POST them, signed, retrying with exponential backoff. Nothing here
// runs on a request's path: FETCH and PUSH never wait for an endpoint. A full
// queue drops the new delivery and counts it (ojs_webhook_deliveries_dropped_total).
//
// Several brokers read the same events: the first to claim a delivery in Redis
// sends it. Retries wait in this broker's memory, so a restart forgets the ones
// due later (at-least-once holds within one broker's life).
#pragma once
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "broker/store/webhook_store.hpp"
#include "broker/webhooks/subscription.hpp"

namespace ojs::broker::webhooks {

struct DispatchOptions {
  bool allow_private = false;               // --webhooks-allow-private (address_guard.hpp)
  std::size_t queue_size = 10000;           // deliveries waiting or being sent; beyond: dropped
  int threads = 4;                          // senders (a slow endpoint holds one for up to `timeout`)
  int max_attempts = 8;                     // ojs-webhooks.md §7.2; then the delivery is dead
  std::chrono::milliseconds retry_base{30000};  // the first retry's delay; later ones as §7.2's table scales it
  std::chrono::milliseconds timeout{30000};     // §7.3
  std::size_t log_size = 100;               // delivery log entries kept per subscription
  std::chrono::milliseconds refresh{1000};  // subscriptions re-read (changes made through other brokers)
};

class Dispatcher {
 public:
  Dispatcher(WebhookStore& store, DispatchOptions options);
  ~Dispatcher();
  void start();
  void stop();  // pending deliveries are dropped

  // Whether any subscription is active: the hub reads events only while one is
  // (or an SSE client listens).
  bool wanted() const { return wanted_.load(std::memory_order_relaxed); }
  // One event (broker/events to_event shape); `event_key` names it uniquely over
  // every queue. Never blocks on I/O: matching is on the in-memory subscriptions.
  void offer(const std::string& event_key, const nlohmann::json& event);
  // Re-reads the subscriptions now (one changed through this broker).
  void reload();

  // The delay before attempt `attempt` (2, 3, ...): §7.2's 30 s, 2 min, 10 min, 1 h,
  // 4 h, 12 h, 24 h, as multiples of retry_base.
  static std::chrono::milliseconds backoff(std::chrono::milliseconds base, int attempt);

 private:
  struct Delivery {
    std::string id;  // stable over retries (§7.5)
    std::string subscription_id;
    std::string event_type;
    std::string event_id;
    std::string body;
    int attempt = 1;
  };
  using Clock = std::chrono::steady_clock;

  void run();
  void refresh();
  void attempt(Delivery delivery);
  void schedule(Delivery delivery, Clock::time_point due);  // under mutex_
  void log(const Delivery& delivery, const std::string& status, long status_code, const std::string& error, std::int64_t duration_ms);
  std::shared_ptr<const std::vector<Subscription>> subscriptions() const;

  WebhookStore& store_;
  const DispatchOptions options_;
  std::atomic<bool> wanted_{false};

  mutable std::mutex subs_mutex_;
  std::shared_ptr<const std::vector<Subscription>> subs_ = std::make_shared<std::vector<Subscription>>();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::multimap<Clock::time_point, Delivery> pending_;
  std::size_t in_flight_ = 0;
  Clock::time_point next_refresh_{};
  bool refreshing_ = false;
  bool stopping_ = false;
  std::atomic<bool> cancel_{false};  // stopping_, read by a request in flight (it is abandoned)
  Clock::time_point last_drop_warning_{};
  std::vector<std::thread> senders_;
};

}  // namespace ojs::broker::webhooks
