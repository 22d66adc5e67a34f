// Webhook subscriptions and their delivery log (ojs-webhooks.md).
#pragma once
#include "broker/api/api.hpp"

namespace ojs::broker {

namespace webhooks {
class WebhookService;
}
void register_webhooks_api(Router& router, ApiContext& ctx, webhooks::WebhookService& webhooks);

}  // namespace ojs::broker
