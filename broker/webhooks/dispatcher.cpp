#include "broker/webhooks/dispatcher.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>

#include "broker/observability/metrics.hpp"
#include "broker/webhooks/address_guard.hpp"
#include "broker/webhooks/http_post.hpp"
#include "ojs/core/digest.hpp"
#include "ojs/core/error.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker::webhooks {

namespace {

constexpr auto kClaimTtl = std::chrono::hours(48);  // longer than every retry of a delivery

// §7.2's delays after the first retry's (30 s): 2 min, 10 min, 1 h, 4 h, 12 h, 24 h.
constexpr std::array<int, 7> kBackoffFactors = {1, 4, 20, 120, 480, 1440, 2880};

bool retryable(long status) { return status == 0 || status == 429 || status >= 500; }

}  // namespace

Dispatcher::Dispatcher(WebhookStore& store, DispatchOptions options) : store_(store), options_(options) {}

Dispatcher::~Dispatcher() { stop(); }

std::chrono::milliseconds Dispatcher::backoff(std::chrono::milliseconds base, int attempt) {
  const auto step = static_cast<std::size_t>(std::clamp(attempt - 2, 0, static_cast<int>(kBackoffFactors.size()) - 1));
  return base * kBackoffFactors[step];
}

void Dispatcher::start() {
  try {
    refresh();
  } catch (const std::exception& e) {
    spdlog::warn("webhooks: subscriptions not read yet ({}); retried every {} ms", e.what(), options_.refresh.count());
  }
  std::lock_guard lock(mutex_);
  next_refresh_ = Clock::now() + options_.refresh;
  for (int i = 0; i < std::max(1, options_.threads); ++i) senders_.emplace_back([this] { run(); });
}

void Dispatcher::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    cancel_ = true;
    pending_.clear();
  }
  wake_.notify_all();
  for (auto& t : senders_)
    if (t.joinable()) t.join();
  senders_.clear();
}

std::shared_ptr<const std::vector<Subscription>> Dispatcher::subscriptions() const {
  std::lock_guard lock(subs_mutex_);
  return subs_;
}

void Dispatcher::refresh() {
  auto fresh = std::make_shared<std::vector<Subscription>>();
  for (const auto& [id, text] : store_.all())
    if (auto sub = Subscription::from_text(text)) fresh->push_back(std::move(*sub));
  const bool any = std::any_of(fresh->begin(), fresh->end(), [](const Subscription& s) { return s.active; });
  {
    std::lock_guard lock(subs_mutex_);
    subs_ = std::move(fresh);
  }
  wanted_.store(any, std::memory_order_relaxed);
}

void Dispatcher::reload() {
  try {
    refresh();
  } catch (const std::exception& e) {
    spdlog::warn("webhooks: subscriptions not re-read ({}); the next refresh reads them", e.what());
  }
}

void Dispatcher::offer(const std::string& event_key, const nlohmann::json& event) {
  const auto subs = subscriptions();
  std::string body;  // rendered once, for the first subscription that wants it
  for (const auto& sub : *subs) {
    if (!sub.wants(event)) continue;
    if (body.empty()) {
      auto payload = event;
      payload["source"] = "ojs://broker";
      body = payload.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    Delivery d{"del_" + sha256_hex(sub.id + "|" + event_key).substr(0, 32), sub.id, event.value("type", ""), event.value("id", ""), body, 1};
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    if (pending_.size() + in_flight_ >= options_.queue_size) {
      obs::Metrics::global().record_webhook_dropped();
      const auto now = Clock::now();
      if (now - last_drop_warning_ > std::chrono::seconds(10)) {
        spdlog::warn("webhooks: {} deliveries wait already (--webhooks-queue-size); new ones are dropped and counted", options_.queue_size);
        last_drop_warning_ = now;
      }
      continue;
    }
    schedule(std::move(d), Clock::now());
  }
}

void Dispatcher::schedule(Delivery delivery, Clock::time_point due) {
  pending_.emplace(due, std::move(delivery));
  wake_.notify_one();
}

void Dispatcher::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    const auto now = Clock::now();
    if (stopping_) return;
    if (!refreshing_ && now >= next_refresh_) {
      refreshing_ = true;
      lock.unlock();
      reload();
      lock.lock();
      refreshing_ = false;
      next_refresh_ = Clock::now() + options_.refresh;
      continue;
    }
    if (!pending_.empty() && pending_.begin()->first <= now) {
      auto delivery = std::move(pending_.begin()->second);
      pending_.erase(pending_.begin());
      ++in_flight_;
      lock.unlock();
      try {
        attempt(std::move(delivery));
      } catch (const std::exception& e) {
        spdlog::warn("webhooks: a delivery failed unexpectedly: {}", e.what());
      }
      lock.lock();
      --in_flight_;
      continue;
    }
    // Another sender refreshing: wake for deliveries only (its refresh is not ours to wait for).
    auto until = refreshing_ ? now + options_.refresh : next_refresh_;
    if (!pending_.empty()) until = std::min(until, pending_.begin()->first);
    wake_.wait_until(lock, until);
  }
}

void Dispatcher::log(const Delivery& d, const std::string& status, long status_code, const std::string& error, std::int64_t duration_ms) {
  nlohmann::json entry = {{"id", d.id},           {"subscription_id", d.subscription_id}, {"event_id", d.event_id},
                          {"event_type", d.event_type}, {"attempt", d.attempt},            {"status", status},
                          {"at", format_rfc3339(now_ms())}, {"duration_ms", duration_ms}};
  if (status_code > 0) entry["status_code"] = status_code;
  if (!error.empty()) entry["error"] = error;
  obs::Metrics::global().record_webhook_attempt(status);
  try {
    store_.log_delivery(d.subscription_id, entry.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), options_.log_size);
  } catch (const std::exception& e) {
    spdlog::warn("webhooks: delivery {} not logged: {}", d.id, e.what());
  }
}

void Dispatcher::attempt(Delivery d) {
  // The subscription as it is now: deleted or paused since, the delivery is cancelled
  // (§6.5); a rotated secret or a new URL applies to the next attempt.
  const auto subs = subscriptions();
  const auto it = std::find_if(subs->begin(), subs->end(), [&](const Subscription& s) { return s.id == d.subscription_id; });
  if (it == subs->end() || !it->active) {
    obs::Metrics::global().record_webhook_attempt("cancelled");
    return;
  }
  const Subscription sub = *it;
  const auto retry_or_die = [&](const std::string& error, long status_code, std::int64_t duration_ms, long retry_after_s) {
    if (d.attempt >= options_.max_attempts) {
      log(d, "dead", status_code, error, duration_ms);
      return;
    }
    log(d, "failed", status_code, error, duration_ms);
    auto delay = backoff(options_.retry_base, d.attempt + 1);
    if (retry_after_s >= 0) delay = std::max<std::chrono::milliseconds>(delay, std::chrono::seconds(std::min(retry_after_s, 86400L)));
    ++d.attempt;
    std::lock_guard lock(mutex_);
    if (!stopping_) schedule(std::move(d), Clock::now() + delay);
  };
  if (d.attempt == 1) {
    try {
      if (!store_.claim(d.id, kClaimTtl)) return;  // another broker sends it
    } catch (const BackendUnavailable& e) {
      retry_or_die(std::string("Redis unavailable: ") + e.what(), 0, 0, -1);
      return;
    }
  }
  WebhookUrl url;
  try {
    url = parse_webhook_url(sub.url);
  } catch (const OjsError& e) {
    log(d, "dead", 0, e.what(), 0);
    return;
  }
  const auto target = resolve_target(url, options_.allow_private);
  if (target.forbidden) {
    log(d, "dead", 0, target.error, 0);  // the rules will not change for a retry
    return;
  }
  if (!target.error.empty()) {
    retry_or_die(target.error, 0, 0, -1);
    return;
  }
  // §8.1: HMAC-SHA256 over "<timestamp>.<body>", hex, as "sha256=<hex>".
  const auto timestamp = std::to_string(now_ms() / 1000);
  const std::vector<std::string> headers = {
      "Content-Type: application/json",
      "User-Agent: OJS-Webhook/1.0",
      "X-OJS-Event-Type: " + d.event_type,
      "X-OJS-Delivery-ID: " + d.id,
      "X-OJS-Subscription-ID: " + d.subscription_id,
      "X-OJS-Timestamp: " + timestamp,
      "X-OJS-Signature: sha256=" + hmac_sha256_hex(sub.secret, timestamp + "." + d.body),
      "Expect:",  // no 100-continue round trip
  };
  const auto result = post_json(url, target.address, headers, d.body, options_.timeout, cancel_);
  if (result.status >= 200 && result.status < 300) {
    log(d, "delivered", result.status, "", result.duration_ms);
    return;
  }
  const auto error = result.status == 0 ? result.error : "HTTP " + std::to_string(result.status) + (result.body.empty() ? "" : ": " + result.body.substr(0, 200));
  if (!retryable(result.status)) {
    // 4xx: the endpoint refused it (§7.1); 3xx: redirects are not followed (address_guard.hpp).
    log(d, "dead", result.status, error, result.duration_ms);
    return;
  }
  retry_or_die(error, result.status, result.duration_ms, result.status == 429 ? result.retry_after_s : -1);
}

}  // namespace ojs::broker::webhooks
