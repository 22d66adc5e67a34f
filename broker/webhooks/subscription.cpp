#include "broker/webhooks/subscription.hpp"

#include <openssl/rand.h>

#include <algorithm>
#include <regex>
#include <set>

#include "broker/events/event_log.hpp"
#include "broker/webhooks/address_guard.hpp"
#include "ojs/core/digest.hpp"
#include "ojs/core/error.hpp"

namespace ojs::broker::webhooks {

namespace {

constexpr std::size_t kMaxEvents = 64;
constexpr std::size_t kMaxFilterValues = 64;
constexpr std::size_t kMaxMetadataBytes = 4096;

// "job.completed", "workflow.*", "*": dotted lowercase names, a trailing ".*" wildcard.
bool valid_event_pattern(const std::string& s) {
  static const std::regex pattern(R"(\*|[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*(\.\*)?)");
  return s.size() <= 128 && std::regex_match(s, pattern);
}

std::vector<std::string> string_list(const nlohmann::json& value, const std::string& field, std::size_t max, bool non_empty,
                                     const std::string& item_rule, bool (*valid)(const std::string&)) {
  if (!value.is_array()) throw invalid_field(field, "must be an array of strings");
  if (non_empty && value.empty()) throw invalid_field(field, "must name at least one " + item_rule);
  if (value.size() > max) throw invalid_field(field, "must have at most " + std::to_string(max) + " entries");
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const auto item = field + "[" + std::to_string(i) + "]";
    if (!value[i].is_string()) throw invalid_field(item, "must be a string");
    const auto& s = value[i].get_ref<const std::string&>();
    if (!valid(s)) throw invalid_field(item, "must be " + item_rule);
    if (seen.insert(s).second) out.push_back(s);
  }
  return out;
}

bool valid_name(const std::string& s) { return !s.empty() && s.size() <= 256; }

void set_url(Subscription& sub, const nlohmann::json& value) {
  if (!value.is_string()) throw invalid_field("url", "must be a string: an absolute http or https URL");
  parse_webhook_url(value.get<std::string>());  // the form; the address rules are the service's
  sub.url = value.get<std::string>();
}

void set_events(Subscription& sub, const nlohmann::json& value) {
  sub.events = string_list(value, "events", kMaxEvents, /*non_empty=*/true,
                           "an event type (\"job.completed\"), a prefix wildcard (\"job.*\") or \"*\"", valid_event_pattern);
}

void set_filter(Subscription& sub, const nlohmann::json& value) {
  if (value.is_null()) {
    sub.queues.clear();
    sub.job_types.clear();
    return;
  }
  if (!value.is_object()) throw invalid_field("filter", "must be an object {queues?, job_types?}");
  for (const auto& [key, _] : value.items())
    if (key != "queues" && key != "job_types") throw invalid_field("filter." + key, "is not a filter (queues, job_types)");
  sub.queues = value.contains("queues") ? string_list(value["queues"], "filter.queues", kMaxFilterValues, false, "a queue name of 1-256 characters", valid_name)
                                        : std::vector<std::string>{};
  sub.job_types = value.contains("job_types")
                      ? string_list(value["job_types"], "filter.job_types", kMaxFilterValues, false, "a job type of 1-256 characters", valid_name)
                      : std::vector<std::string>{};
}

void set_metadata(Subscription& sub, const nlohmann::json& value) {
  if (!value.is_object()) throw invalid_field("metadata", "must be an object");
  if (value.dump().size() > kMaxMetadataBytes)
    throw invalid_field("metadata", "must be at most " + std::to_string(kMaxMetadataBytes) + " bytes as JSON");
  sub.metadata = value;
}

void set_active(Subscription& sub, const nlohmann::json& value) {
  if (!value.is_boolean()) throw invalid_field("active", "must be a boolean");
  sub.active = value.get<bool>();
}

void set_secret(Subscription& sub, const nlohmann::json& value) {
  const auto visible = [](const std::string& s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return c > 0x20 && c < 0x7f; });
  };
  if (!value.is_string() || value.get_ref<const std::string&>().size() < 16 || value.get_ref<const std::string&>().size() > 256 ||
      !visible(value.get_ref<const std::string&>()))
    throw invalid_field("secret", "must be a string of 16-256 visible ASCII characters (absent: the broker makes one)");
  sub.secret = value.get<std::string>();
}

void require_object(const nlohmann::json& body) {
  if (!body.is_object()) throw invalid_field("body", "must be a JSON object");
}

Subscription from_record(const nlohmann::json& r) {
  Subscription s;
  s.id = r.value("id", "");
  s.tenant = r.value("tenant", "");
  s.url = r.value("url", "");
  s.events = r.value("events", std::vector<std::string>{});
  if (r.contains("filter") && r["filter"].is_object()) {
    s.queues = r["filter"].value("queues", std::vector<std::string>{});
    s.job_types = r["filter"].value("job_types", std::vector<std::string>{});
  }
  s.metadata = r.value("metadata", nlohmann::json::object());
  s.active = r.value("active", true);
  s.secret = r.value("secret", "");
  s.created_at = r.value("created_at", "");
  s.updated_at = r.value("updated_at", s.created_at);
  return s;
}

}  // namespace

bool event_type_matches(const std::vector<std::string>& patterns, const std::string& type) {
  for (const auto& p : patterns) {
    if (p == "*" || p == type) return true;
    if (p.size() > 2 && p.ends_with(".*") && type.size() > p.size() - 1 && type.compare(0, p.size() - 1, p, 0, p.size() - 1) == 0)
      return true;
  }
  return false;
}

bool Subscription::wants(const nlohmann::json& event) const {
  if (!active || !event_type_matches(events, event.value("type", ""))) return false;
  const auto& data = event.contains("data") && event["data"].is_object() ? event["data"] : nlohmann::json::object();
  const auto in = [&](const std::vector<std::string>& allowed, const char* key) {
    return allowed.empty() || std::find(allowed.begin(), allowed.end(), data.value(key, "")) != allowed.end();
  };
  if (!in(queues, "queue") || !in(job_types, "job_type")) return false;
  return visible_to(event, tenant);  // ojs-webhooks.md §9.3: the rule a tenant-pinned event reader follows
}

nlohmann::json Subscription::view() const {
  nlohmann::json out = {{"id", id},         {"url", url},       {"events", events},          {"active", active},
                        {"metadata", metadata}, {"created_at", created_at}, {"updated_at", updated_at}};
  if (!queues.empty() || !job_types.empty()) {
    out["filter"] = nlohmann::json::object();
    if (!queues.empty()) out["filter"]["queues"] = queues;
    if (!job_types.empty()) out["filter"]["job_types"] = job_types;
  }
  if (!tenant.empty()) out["tenant"] = tenant;
  return out;
}

nlohmann::json Subscription::record() const {
  auto out = view();
  out["tenant"] = tenant;
  out["secret"] = secret;
  out["filter"] = {{"queues", queues}, {"job_types", job_types}};
  return out;
}

std::optional<Subscription> Subscription::from_text(const std::string& text) {
  const auto record = nlohmann::json::parse(text, nullptr, false);
  if (!record.is_object()) return std::nullopt;
  return from_record(record);
}

OjsError subscription_not_found(const std::string& id) {
  return OjsError(ErrorCode::not_found, "webhook subscription '" + id + "' not found", {{"id", id}});
}


Subscription parse_subscription(const nlohmann::json& body) {
  require_object(body);
  for (const auto& [key, _] : body.items())
    if (key != "url" && key != "events" && key != "secret" && key != "active" && key != "metadata" && key != "filter")
      throw invalid_field(key, "is not a subscription field (url, events, secret, active, metadata, filter)");
  if (!body.contains("url")) throw invalid_field("url", "is required: the endpoint deliveries are POSTed to");
  if (!body.contains("events")) throw invalid_field("events", "is required: the event types to deliver (\"job.*\", \"*\")");
  Subscription sub;
  set_url(sub, body["url"]);
  set_events(sub, body["events"]);
  if (body.contains("filter")) set_filter(sub, body["filter"]);
  if (body.contains("metadata")) set_metadata(sub, body["metadata"]);
  if (body.contains("active")) set_active(sub, body["active"]);
  if (body.contains("secret")) set_secret(sub, body["secret"]);
  else sub.secret = new_secret();
  return sub;
}

void apply_update(Subscription& sub, const nlohmann::json& body) {
  require_object(body);
  for (const auto& [key, value] : body.items()) {
    if (key == "url") set_url(sub, value);
    else if (key == "events") set_events(sub, value);
    else if (key == "filter") set_filter(sub, value);
    else if (key == "metadata") set_metadata(sub, value);
    else if (key == "active") set_active(sub, value);
    else if (key == "secret")
      throw invalid_field("secret", "is not changed by PATCH: POST .../rotate-secret makes a new one");
    else throw invalid_field(key, "is not a subscription field that PATCH changes (url, events, active, metadata, filter)");
  }
}

std::string new_secret() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1) throw std::runtime_error("RAND_bytes failed");
  return "whsec_" + hex_lower(bytes, sizeof bytes);
}

}  // namespace ojs::broker::webhooks
