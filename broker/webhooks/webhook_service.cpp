#include "broker/webhooks/webhook_service.hpp"

#include <algorithm>

#include "broker/webhooks/address_guard.hpp"
#include "ojs/core/error.hpp"
#include "ojs/core/time.hpp"
#include "ojs/core/uuid.hpp"

namespace ojs::broker::webhooks {

namespace {
constexpr std::size_t kMaxIdLength = 128;
}

WebhookService::WebhookService(WebhookStore& store, Dispatcher& dispatcher, ServiceOptions options)
    : store_(store), dispatcher_(dispatcher), options_(options) {}

void WebhookService::check_url(const std::string& url) const {
  check_literal_host(parse_webhook_url(url), options_.allow_private);
}

Subscription WebhookService::load(const std::string& id, const std::string& scope) {
  const auto not_found = [&] { return subscription_not_found(id.substr(0, kMaxIdLength)); };
  if (id.empty() || id.size() > kMaxIdLength) throw not_found();
  const auto text = store_.get(id);
  auto sub = text ? Subscription::from_text(*text) : std::nullopt;
  if (!sub) throw not_found();
  if (!scope.empty() && sub->tenant != scope) throw not_found();  // another tenant's: as if absent
  return *sub;
}

nlohmann::json WebhookService::create(const nlohmann::json& body, const std::string& tenant) {
  auto sub = parse_subscription(body);
  check_url(sub.url);
  sub.id = "sub_" + make_uuidv7();
  sub.tenant = tenant;
  sub.created_at = sub.updated_at = format_rfc3339(now_ms());
  if (store_.create(sub.id, sub.record().dump(), options_.max_subscriptions) == WebhookStore::Put::limit)
    throw OjsError(ErrorCode::validation_error,
                   "this broker keeps at most " + std::to_string(options_.max_subscriptions) + " webhook subscriptions (--webhooks-max-subscriptions)",
                   {{"field", "subscriptions"}, {"rule", "at most --webhooks-max-subscriptions exist"}, {"limit", options_.max_subscriptions}});
  dispatcher_.reload();
  auto out = sub.view();
  out["secret"] = sub.secret;  // §6.1: returned once, here
  return out;
}

nlohmann::json WebhookService::list(const std::string& scope) {
  std::vector<Subscription> subs;
  for (const auto& [id, text] : store_.all()) {
    auto sub = Subscription::from_text(text);
    if (sub && (scope.empty() || sub->tenant == scope)) subs.push_back(std::move(*sub));
  }
  // Oldest first: ids are UUIDv7, their order is creation order.
  std::sort(subs.begin(), subs.end(), [](const Subscription& a, const Subscription& b) { return a.id < b.id; });
  nlohmann::json out = nlohmann::json::array();
  for (const auto& s : subs) out.push_back(s.view());
  return out;
}

nlohmann::json WebhookService::get(const std::string& id, const std::string& scope) { return load(id, scope).view(); }

nlohmann::json WebhookService::store_update(const Subscription& sub) {
  if (store_.replace(sub.id, sub.record().dump()) == WebhookStore::Put::gone) throw subscription_not_found(sub.id);
  dispatcher_.reload();
  return sub.view();
}

nlohmann::json WebhookService::update(const std::string& id, const nlohmann::json& body, const std::string& scope) {
  auto sub = load(id, scope);
  apply_update(sub, body);
  if (body.is_object() && body.contains("url")) check_url(sub.url);
  sub.updated_at = format_rfc3339(now_ms());
  return store_update(sub);
}

nlohmann::json WebhookService::remove(const std::string& id, const std::string& scope) {
  const auto sub = load(id, scope);
  if (!store_.remove(id)) throw subscription_not_found(id);
  dispatcher_.reload();  // its pending deliveries are cancelled when their turn comes
  return sub.view();
}

nlohmann::json WebhookService::rotate_secret(const std::string& id, const std::string& scope) {
  auto sub = load(id, scope);
  sub.secret = new_secret();
  sub.updated_at = format_rfc3339(now_ms());
  auto out = store_update(sub);
  out["secret"] = sub.secret;
  return out;
}

nlohmann::json WebhookService::deliveries(const std::string& subscription_id, const std::string& scope, std::size_t limit) {
  std::vector<std::string> ids;
  if (!subscription_id.empty()) ids.push_back(load(subscription_id, scope).id);
  else
    for (const auto& s : list(scope)) ids.push_back(s["id"].get<std::string>());
  std::vector<nlohmann::json> entries;
  for (const auto& id : ids)
    for (const auto& text : store_.deliveries(id, limit)) {
      auto entry = nlohmann::json::parse(text, nullptr, false);
      if (entry.is_object()) entries.push_back(std::move(entry));
    }
  // Newest first over every log (RFC 3339 UTC times of one width sort as text).
  std::stable_sort(entries.begin(), entries.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    return a.value("at", "") > b.value("at", "");
  });
  if (entries.size() > limit) entries.resize(limit);
  return entries;
}

}  // namespace ojs::broker::webhooks
