// Webhook subscriptions as the API manages them (ojs-webhooks.md §6): create, list,
// get, update, delete, secret rotation, and the delivery log. Every call is scoped
// to a tenant: a caller acting for a tenant sees and changes only that tenant's
// subscriptions (another's is 404, as if absent); "" = every tenant (an admin).
#pragma once
#include <nlohmann/json.hpp>

#include <string>

#include "broker/store/webhook_store.hpp"
#include "broker/webhooks/dispatcher.hpp"

namespace ojs::broker::webhooks {

struct ServiceOptions {
  bool allow_private = false;         // --webhooks-allow-private: URLs may name private addresses
  long long max_subscriptions = 1000;  // --webhooks-max-subscriptions (0: no cap)
};

class WebhookService {
 public:
  WebhookService(WebhookStore& store, Dispatcher& dispatcher, ServiceOptions options);

  // The view with its secret (the only answer that carries it, with rotate_secret).
  nlohmann::json create(const nlohmann::json& body, const std::string& tenant);
  nlohmann::json list(const std::string& scope);
  nlohmann::json get(const std::string& id, const std::string& scope);
  nlohmann::json update(const std::string& id, const nlohmann::json& body, const std::string& scope);
  nlohmann::json remove(const std::string& id, const std::string& scope);
  nlohmann::json rotate_secret(const std::string& id, const std::string& scope);
  // The latest delivery attempts, newest first: of one subscription, or ("" id) of
  // every subscription in scope.
  nlohmann::json deliveries(const std::string& subscription_id, const std::string& scope, std::size_t limit);

 private:
  Subscription load(const std::string& id, const std::string& scope);  // 404 when absent or out of scope
  void check_url(const std::string& url) const;
  nlohmann::json store_update(const Subscription& sub);

  WebhookStore& store_;
  Dispatcher& dispatcher_;
  const ServiceOptions options_;
};

}  // namespace ojs::broker::webhooks
