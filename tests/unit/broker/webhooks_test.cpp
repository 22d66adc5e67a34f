// Webhook rules that need no process: which addresses the SSRF guard refuses, how
// event patterns match, the retry schedule, what a subscription may say.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include "broker/webhooks/address_guard.hpp"
#include "broker/webhooks/dispatcher.hpp"
#include "broker/webhooks/subscription.hpp"
#include "ojs/core/error.hpp"

using namespace ojs::broker::webhooks;

namespace {

std::string reason_for(const std::string& text) {
  sockaddr_storage storage{};
  if (text.find(':') != std::string::npos) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&storage);
    a->sin6_family = AF_INET6;
    EXPECT_EQ(inet_pton(AF_INET6, text.c_str(), &a->sin6_addr), 1) << text;
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&storage);
    a->sin_family = AF_INET;
    EXPECT_EQ(inet_pton(AF_INET, text.c_str(), &a->sin_addr), 1) << text;
  }
  return forbidden_reason(reinterpret_cast<sockaddr*>(&storage));
}

}  // namespace

TEST(WebhookAddressGuard, RefusesTheHostsOwnNetworksOnly) {
  for (const char* refused : {"127.0.0.1", "127.255.0.9", "10.0.0.1", "172.16.0.1", "172.31.255.255", "192.168.1.1", "100.64.0.1",
                              "169.254.169.254", "0.0.0.0", "224.0.0.1", "255.255.255.255", "::", "::1", "fe80::1", "fd12::1",
                              "fc00::1", "ff02::1", "::ffff:10.0.0.1", "::ffff:127.0.0.1", "64:ff9b::a00:1"})
    EXPECT_FALSE(reason_for(refused).empty()) << refused;
  for (const char* allowed : {"8.8.8.8", "93.184.216.34", "172.32.0.1", "100.128.0.1", "192.169.0.1", "2606:2800:220:1::1",
                              "::ffff:8.8.8.8"})
    EXPECT_EQ(reason_for(allowed), "") << allowed;
}

TEST(WebhookAddressGuard, LiteralHostsAreCheckedAtCreation) {
  EXPECT_THROW(check_literal_host(parse_webhook_url("http://127.1/"), false), ojs::OjsError);
  EXPECT_THROW(check_literal_host(parse_webhook_url("http://LocalHost./x"), false), ojs::OjsError);
  EXPECT_THROW(check_literal_host(parse_webhook_url("http://[::1]:9/"), false), ojs::OjsError);
  EXPECT_NO_THROW(check_literal_host(parse_webhook_url("http://127.0.0.1:9/"), true));
  EXPECT_NO_THROW(check_literal_host(parse_webhook_url("https://example.com/hook"), false));
  EXPECT_EQ(parse_webhook_url("https://example.com/hook").port, 443);
  EXPECT_THROW(parse_webhook_url("file:///etc/passwd"), ojs::OjsError);
  EXPECT_THROW(parse_webhook_url("gopher://example.com/"), ojs::OjsError);
}

TEST(WebhookSubscription, EventPatternsMatchExactlyOrByPrefix) {
  EXPECT_TRUE(event_type_matches({"job.completed"}, "job.completed"));
  EXPECT_FALSE(event_type_matches({"job.completed"}, "job.failed"));
  EXPECT_TRUE(event_type_matches({"job.*"}, "job.failed"));
  EXPECT_FALSE(event_type_matches({"job.*"}, "jobs.failed"));
  EXPECT_FALSE(event_type_matches({"job.*"}, "job."));
  EXPECT_TRUE(event_type_matches({"*"}, "workflow.completed"));
}

TEST(WebhookSubscription, WantsOnlyItsTenantsEventsThroughItsFilter) {
  auto sub = parse_subscription({{"url", "https://example.com/h"}, {"events", {"job.*"}}, {"filter", {{"queues", {"q"}}}}});
  sub.tenant = "a";
  const nlohmann::json event = {{"type", "job.completed"}, {"data", {{"queue", "q"}, {"tenant", "a"}}}};
  EXPECT_TRUE(sub.wants(event));
  auto other = event;
  other["data"]["tenant"] = "b";
  EXPECT_FALSE(sub.wants(other));
  other = event;
  other["data"]["queue"] = "r";
  EXPECT_FALSE(sub.wants(other));
  sub.active = false;
  EXPECT_FALSE(sub.wants(event));
  EXPECT_EQ(sub.secret.rfind("whsec_", 0), 0u);
  EXPECT_FALSE(sub.view().contains("secret"));
}

TEST(WebhookDispatcher, BackoffFollowsTheSpecTable) {
  const std::chrono::milliseconds base(30000);
  EXPECT_EQ(Dispatcher::backoff(base, 2), std::chrono::seconds(30));
  EXPECT_EQ(Dispatcher::backoff(base, 3), std::chrono::minutes(2));
  EXPECT_EQ(Dispatcher::backoff(base, 4), std::chrono::minutes(10));
  EXPECT_EQ(Dispatcher::backoff(base, 5), std::chrono::hours(1));
  EXPECT_EQ(Dispatcher::backoff(base, 8), std::chrono::hours(24));
  EXPECT_EQ(Dispatcher::backoff(base, 20), std::chrono::hours(24));
}
