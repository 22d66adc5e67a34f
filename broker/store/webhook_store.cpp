#include "broker/store/webhook_store.hpp"

#include "broker/store/keys.hpp"

namespace ojs::broker {

namespace {
WebhookStore::Put put_result(long long reply) {
  if (reply == 1) return WebhookStore::Put::stored;
  return reply == 0 ? WebhookStore::Put::gone : WebhookStore::Put::limit;
}
}  // namespace

WebhookStore::Put WebhookStore::create(const std::string& id, const std::string& json, long long max_subscriptions) {
  return put_result(redis_.eval("webhook_put", {keys::webhooks}, {"create", id, json, std::to_string(max_subscriptions)}).integer);
}

WebhookStore::Put WebhookStore::replace(const std::string& id, const std::string& json) {
  return put_result(redis_.eval("webhook_put", {keys::webhooks}, {"replace", id, json, "0"}).integer);
}

std::optional<std::string> WebhookStore::get(const std::string& id) {
  auto reply = redis_.command({"HGET", keys::webhooks, id});
  if (reply.is_nil()) return std::nullopt;
  return std::move(reply.str);
}

std::map<std::string, std::string> WebhookStore::all() {
  const auto reply = redis_.command({"HGETALL", keys::webhooks});
  std::map<std::string, std::string> out;
  for (std::size_t i = 0; i + 1 < reply.elements.size(); i += 2) out[reply.elements[i].str] = reply.elements[i + 1].str;
  return out;
}

bool WebhookStore::remove(const std::string& id) {
  const auto replies = redis_.pipeline({{"HDEL", keys::webhooks, id}, {"DEL", keys::webhook_deliveries(id)}});
  return !replies.empty() && replies[0].integer == 1;
}

void WebhookStore::log_delivery(const std::string& subscription_id, const std::string& entry, std::size_t keep) {
  const auto key = keys::webhook_deliveries(subscription_id);
  redis_.pipeline({{"LPUSH", key, entry}, {"LTRIM", key, "0", std::to_string(keep > 0 ? keep - 1 : 0)}});
}

std::vector<std::string> WebhookStore::deliveries(const std::string& subscription_id, std::size_t limit) {
  if (limit == 0) return {};
  const auto reply = redis_.command({"LRANGE", keys::webhook_deliveries(subscription_id), "0", std::to_string(limit - 1)});
  std::vector<std::string> out;
  for (const auto& e : reply.elements) out.push_back(e.str);
  return out;
}

bool WebhookStore::claim(const std::string& delivery_id, std::chrono::milliseconds ttl) {
  const auto reply = redis_.command({"SET", keys::webhook_claim(delivery_id), "1", "NX", "PX", std::to_string(ttl.count())});
  return !reply.is_nil();
}

}  // namespace ojs::broker
