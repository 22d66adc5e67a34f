// Webhook subscriptions and their delivery logs in Redis (ojs-webhooks.md). The
// subscriptions are opaque JSON text here: broker/webhooks parses and checks them.
// Every key is in the global slot (keys.hpp), so a Redis Cluster serves them too.
#pragma once
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "broker/store/redis_client.hpp"

namespace ojs::broker {

class WebhookStore {
 public:
  explicit WebhookStore(RedisPool& redis) : redis_(redis) {}

  enum class Put { stored, gone, limit };
  // A new subscription, unless `max_subscriptions` (0 = no cap) exist already.
  Put create(const std::string& id, const std::string& json, long long max_subscriptions);
  // A new version of an existing subscription (gone: deleted meanwhile).
  Put replace(const std::string& id, const std::string& json);
  std::optional<std::string> get(const std::string& id);
  std::map<std::string, std::string> all();  // id -> JSON
  // The subscription and its delivery log; false when it did not exist.
  bool remove(const std::string& id);

  // The delivery log: `entry` first, at most `keep` entries kept (one round trip).
  void log_delivery(const std::string& subscription_id, const std::string& entry, std::size_t keep);
  std::vector<std::string> deliveries(const std::string& subscription_id, std::size_t limit);  // newest first

  // Whether this broker is the one that sends `delivery_id` (several brokers read the
  // same events): the first to ask within `ttl` is.
  bool claim(const std::string& delivery_id, std::chrono::milliseconds ttl);

 private:
  RedisPool& redis_;
};

}  // namespace ojs::broker
