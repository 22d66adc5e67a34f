#include "broker/uniqueness/unique_policy.hpp"

#include <algorithm>
#include <set>

#include "ojs/core/digest.hpp"
#include "ojs/core/error.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker {

using nlohmann::json;

namespace {

const std::set<std::string> kDimensions = {"type", "queue", "args", "meta"};
const std::set<std::string> kStates = {"available", "active", "scheduled", "retryable", "pending",
                                       "completed", "discarded", "cancelled"};
const std::set<std::string> kPolicies = {"reject", "ignore", "replace", "replace_except_schedule"};

std::vector<std::string> string_list(const json& policy, const char* field, const std::set<std::string>* allowed) {
  const std::string name = std::string("unique.") + field;
  const auto& v = policy[field];
  if (!v.is_array()) throw invalid_field(name, "must be an array of strings");
  std::vector<std::string> out;
  for (const auto& item : v) {
    if (!item.is_string() || item.get<std::string>().empty()) throw invalid_field(name, "must be an array of non-empty strings");
    if (allowed && !allowed->count(item.get<std::string>()))
      throw invalid_field(name, "'" + item.get<std::string>() + "' is not one of " + json(*allowed).dump());
    out.push_back(item.get<std::string>());
  }
  return out;
}

// The object args_keys pick from: args itself when it is an object, else the
// first object in the args array (OJS args are an array; SDKs pass one object).
const json* args_object(const json& document) {
  if (!document.contains("args")) return nullptr;
  const auto& args = document["args"];
  if (args.is_object()) return &args;
  if (args.is_array())
    for (const auto& a : args)
      if (a.is_object()) return &a;
  return nullptr;
}

}  // namespace

std::string canonical_dimensions(const json& document, const json& policy) {
  std::vector<std::string> keys = policy.contains("keys") ? string_list(policy, "keys", &kDimensions) : std::vector<std::string>{"type"};
  json dims = json::object();  // nlohmann::json objects are ordered by key: canonical order
  dims["type"] = document.value("type", "");  // always part of the key (section 2.2)
  const bool want_args = std::count(keys.begin(), keys.end(), "args") > 0;
  const bool want_meta = std::count(keys.begin(), keys.end(), "meta") > 0;
  if (std::count(keys.begin(), keys.end(), "queue")) dims["queue"] = document.value("queue", "default");
  if (want_args) {
    if (policy.contains("args_keys") && !policy["args_keys"].is_null()) {
      const auto* args = args_object(document);
      json picked = json::object();
      for (const auto& k : string_list(policy, "args_keys", nullptr)) {
        if (!args || !args->contains(k)) throw invalid_field("unique.args_keys", "'" + k + "' is not a key of the job's args");
        picked[k] = (*args)[k];
      }
      dims["args"] = picked;
    } else {
      dims["args"] = document.contains("args") ? document["args"] : json::array();
    }
  }
  if (want_meta) {
    if (!policy.contains("meta_keys") || policy["meta_keys"].is_null() || (policy["meta_keys"].is_array() && policy["meta_keys"].empty()))
      throw invalid_field("unique.meta_keys", "is required (non-empty) when unique.keys holds \"meta\"");
    const json meta = document.contains("meta") && document["meta"].is_object() ? document["meta"] : json::object();
    json picked = json::object();
    for (const auto& k : string_list(policy, "meta_keys", nullptr)) picked[k] = meta.contains(k) ? meta[k] : json(nullptr);
    dims["meta"] = picked;
  }
  return dims.dump();
}

std::optional<UniquePolicy> parse_unique_policy(const json& document) {
  if (!document.is_object() || !document.contains("unique") || document["unique"].is_null()) return std::nullopt;
  const auto& policy = document["unique"];
  if (!policy.is_object()) throw invalid_field("unique", "must be an object");
  for (const auto& [field, _] : policy.items())
    if (!std::set<std::string>{"keys", "args_keys", "meta_keys", "period", "states", "on_conflict"}.count(field))
      throw invalid_field("unique." + field, "is not a unique policy field (keys, args_keys, meta_keys, period, states, on_conflict)");
  UniquePolicy out;
  out.key = sha256_hex(canonical_dimensions(document, policy));
  out.states = policy.contains("states") ? string_list(policy, "states", &kStates)
                                         : std::vector<std::string>{"available", "active", "scheduled", "retryable", "pending"};
  if (out.states.empty()) throw invalid_field("unique.states", "must name at least one state");
  if (policy.contains("period") && !policy["period"].is_null()) {
    const auto ms = policy["period"].is_string() ? parse_iso8601_duration(policy["period"].get<std::string>()) : std::nullopt;
    if (!ms || *ms <= 0) throw invalid_field("unique.period", "must be a positive ISO 8601 duration such as \"PT1H\"");
    out.period_ms = *ms;
  }
  if (policy.contains("on_conflict")) {
    if (!policy["on_conflict"].is_string() || !kPolicies.count(policy["on_conflict"].get<std::string>()))
      throw invalid_field("unique.on_conflict", "must be one of reject, ignore, replace, replace_except_schedule");
    out.on_conflict = policy["on_conflict"].get<std::string>();
  }
  return out;
}

}  // namespace ojs::broker
