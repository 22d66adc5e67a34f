// Webhook subscriptions (ojs-webhooks.md §6, §10):
//   POST/GET /ojs/v1/webhooks/subscriptions, GET/PATCH/DELETE .../subscriptions/{id},
//   POST .../subscriptions/{id}/rotate-secret, GET /ojs/v1/webhooks/deliveries.
// Each is scoped to the caller's tenant (the token's pin or X-OJS-Tenant): another
// tenant's subscription is 404.
#include "broker/api/webhooks_api.hpp"
#include "broker/api/json_io.hpp"
#include "broker/api/tenant_header.hpp"
#include "broker/webhooks/webhook_service.hpp"
#include "ojs/core/error.hpp"

namespace ojs::broker {

void register_webhooks_api(Router& router, ApiContext& ctx, webhooks::WebhookService& webhooks) {
  constexpr const char* kBase = "/ojs/v1/webhooks/subscriptions";
  router.add("POST", kBase, [&ctx, &webhooks](const HttpRequest& r) {
    // Deliveries are made of job events: without them a subscription would never fire.
    if (ctx.config.events == "off")
      throw OjsError(ErrorCode::unsupported, "job events are turned off on this broker (--events off): a webhook would never fire",
                     {{"field", "events"}, {"rule", "needs a broker started with --events bounded (the default)"}});
    const auto tenant = request_tenant(r);
    auto sub = webhooks.create(parse_json_body(r), tenant);
    auto reply = json_reply(201, {{"subscription", sub}});
    reply.headers.emplace_back("Location", std::string("/ojs/v1/webhooks/subscriptions/") + sub["id"].get<std::string>());
    return reply;
  });
  router.add("GET", kBase, [&webhooks](const HttpRequest& r) {
    auto subs = webhooks.list(request_tenant(r));
    const auto n = subs.size();
    return json_reply(200, {{"subscriptions", std::move(subs)}, {"count", n}});
  });
  router.add("GET", std::string(kBase) + "/{id}", [&webhooks](const HttpRequest& r) {
    return json_reply(200, {{"subscription", webhooks.get(r.params.at("id"), request_tenant(r))}});
  });
  router.add("PATCH", std::string(kBase) + "/{id}", [&webhooks](const HttpRequest& r) {
    const auto tenant = request_tenant(r);
    return json_reply(200, {{"subscription", webhooks.update(r.params.at("id"), parse_json_body(r), tenant)}});
  });
  router.add("DELETE", std::string(kBase) + "/{id}", [&webhooks](const HttpRequest& r) {
    return json_reply(200, {{"subscription", webhooks.remove(r.params.at("id"), request_tenant(r))}, {"deleted", true}});
  });
  router.add("POST", std::string(kBase) + "/{id}/rotate-secret", [&webhooks](const HttpRequest& r) {
    return json_reply(200, {{"subscription", webhooks.rotate_secret(r.params.at("id"), request_tenant(r))}});
  });
  router.add("GET", "/ojs/v1/webhooks/deliveries", [&webhooks](const HttpRequest& r) {
    const auto limit = static_cast<std::size_t>(int_query(r, "limit", 50, 1, 1000));
    return json_reply(200, {{"deliveries", webhooks.deliveries(r.query_or("subscription_id", ""), request_tenant(r), limit)}});
  });
}

}  // namespace ojs::broker
