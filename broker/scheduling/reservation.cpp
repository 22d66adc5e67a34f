// Reservations (the type): membership, the admin API's body and the stored form.
#include "broker/scheduling/reservation.hpp"

#include <algorithm>

#include "ojs/core/envelope.hpp"
#include "ojs/core/error.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker {

using nlohmann::json;

bool Reservation::contains(const std::string& worker_id, const ml::Capabilities* caps) const {
  if (std::find(worker_ids.begin(), worker_ids.end(), worker_id) != worker_ids.end()) return true;
  if (labels.empty() || !caps) return false;
  for (const auto& [k, v] : labels) {
    auto it = caps->labels.find(k);
    if (it == caps->labels.end() || it->second != v) return false;
  }
  return true;
}

json Reservation::to_json() const {
  return {{"id", id},       {"worker_ids", worker_ids}, {"labels", labels},
          {"gpus", gpus},   {"expires_at", format_rfc3339(expires_at_ms)}, {"created_at", format_rfc3339(created_at_ms)}};
}

Reservation Reservation::parse(const json& body, std::int64_t now) {
  if (!body.is_object()) throw invalid_field("$", "request body must be a JSON object");
  Reservation r;
  r.created_at_ms = now;
  if (!body.contains("id") || !body["id"].is_string() || body["id"].get<std::string>().empty() ||
      body["id"].get<std::string>().size() > 200)
    throw invalid_field("id", "is required: a non-empty string of at most 200 characters");
  r.id = body["id"].get<std::string>();
  if (body.contains("worker_ids")) {
    if (!body["worker_ids"].is_array()) throw invalid_field("worker_ids", "must be an array of worker ids");
    for (const auto& w : body["worker_ids"]) {
      r.worker_ids.push_back(require_worker_id(w, "worker_ids"));
    }
  }
  if (body.contains("labels")) {
    if (!body["labels"].is_object()) throw invalid_field("labels", "must be an object of label values");
    for (auto it = body["labels"].begin(); it != body["labels"].end(); ++it) {
      if (!it.value().is_string()) throw invalid_field("labels." + it.key(), "must be a string");
      r.labels[it.key()] = it.value().get<std::string>();
    }
  }
  if (r.worker_ids.empty() && r.labels.empty()) throw invalid_field("worker_ids", "worker_ids or labels must select at least one worker");
  if (body.contains("gpus")) {
    if (!body["gpus"].is_number_integer() || body["gpus"].get<long long>() < 0 || body["gpus"].get<long long>() > 1024)
      throw invalid_field("gpus", "must be an integer between 0 (all of the worker's GPUs) and 1024");
    r.gpus = body["gpus"].get<int>();
  }
  if (body.contains("expires_at")) {
    auto ms = body["expires_at"].is_string() ? parse_rfc3339(body["expires_at"].get<std::string>()) : std::nullopt;
    if (!ms) throw invalid_field("expires_at", "must be an RFC 3339 timestamp");
    if (*ms <= now) throw invalid_field("expires_at", "must be in the future");
    r.expires_at_ms = *ms;
  } else if (body.contains("ttl_s")) {
    // Bounded so now + ttl cannot overflow into the past.
    if (!body["ttl_s"].is_number_integer() || body["ttl_s"].get<long long>() < 1 || body["ttl_s"].get<long long>() > kMaxDurationMs / 1000)
      throw invalid_field("ttl_s", "must be an integer between 1 and " + std::to_string(kMaxDurationMs / 1000) + " (100 years)");
    r.expires_at_ms = now + body["ttl_s"].get<long long>() * 1000;
  } else {
    throw invalid_field("expires_at", "is required (or ttl_s)");
  }
  return r;
}

std::map<std::string, Reservation> load_reservations(PreemptionStore& store) {
  std::map<std::string, Reservation> out;
  for (const auto& [id, text] : store.reservations()) {
    auto j = json::parse(text, nullptr, false);
    if (!j.is_object()) continue;
    Reservation r;
    r.id = id;
    r.worker_ids = j.value("worker_ids", std::vector<std::string>{});
    r.labels = j.value("labels", ml::Labels{});
    r.gpus = j.value("gpus", 0);
    r.expires_at_ms = parse_rfc3339(j.value("expires_at", "")).value_or(0);
    r.created_at_ms = parse_rfc3339(j.value("created_at", "")).value_or(0);
    out.emplace(r.id, std::move(r));
  }
  return out;
}

}  // namespace ojs::broker
