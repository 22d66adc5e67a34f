// A webhook subscription (ojs-webhooks.md §5.1): where events go, which ones, and
// the secret they are signed with. Parsing checks every field a client sends and
// names the one that breaks a rule; the stored form keeps what the view leaves out
// (the secret, the tenant that owns it).
#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "ojs/core/error.hpp"

namespace ojs::broker::webhooks {

struct Subscription {
  std::string id;      // "sub_" + UUIDv7
  std::string tenant;  // the tenant that created it ("" = none: every tenant's events)
  std::string url;
  std::vector<std::string> events;  // exact types, "prefix.*" or "*"
  std::vector<std::string> queues;  // filter.queues (empty: any)
  std::vector<std::string> job_types;  // filter.job_types (empty: any)
  nlohmann::json metadata = nlohmann::json::object();
  bool active = true;
  std::string secret;
  std::string created_at, updated_at;

  // Whether an event (broker/events to_event shape) goes to this subscription:
  // active, its type named, the filter met, and the event of its tenant.
  bool wants(const nlohmann::json& event) const;
  // The API's view: everything but the secret (ojs-webhooks.md §6.3) and the tenant
  // only when it has one.
  nlohmann::json view() const;
  nlohmann::json record() const;  // what the store keeps
  static std::optional<Subscription> from_text(const std::string& stored);  // record()'s text; none when not a JSON object
};

// 404 naming the subscription (absent, or another tenant's: the same answer).
OjsError subscription_not_found(const std::string& id);

// Whether `type` matches one of `patterns` ("job.completed", "job.*", "*").
bool event_type_matches(const std::vector<std::string>& patterns, const std::string& type);

// A create body (ojs-webhooks.md §6.1): url and events required; secret, active,
// metadata, filter optional. OjsError naming the field (400) for a malformed one.
// The URL's address rules are the service's (they depend on the broker's flags).
Subscription parse_subscription(const nlohmann::json& body);
// A PATCH body: the fields it names replace the subscription's (url, events,
// active, metadata, filter); the same rules as at creation.
void apply_update(Subscription& subscription, const nlohmann::json& body);

// A new signing secret: "whsec_" and 32 random bytes in hex.
std::string new_secret();

}  // namespace ojs::broker::webhooks
