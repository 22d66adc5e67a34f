#include "broker/store/job_record.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>

#include "broker/store/priority_score.hpp"
#include "broker/store/usage_resources.hpp"
#include "ojs/core/envelope.hpp"
#include "ojs/core/time.hpp"
#include "ojs/ml/requirements.hpp"
#include "ojs/ml/worker_load.hpp"

namespace ojs::broker {

namespace {
const std::string kEmpty;

// Hash fields holding epoch milliseconds, rendered as RFC 3339.
constexpr const char* kTimestampFields[] = {"created_at",   "enqueued_at",  "started_at",      "completed_at",
                                            "cancelled_at", "discarded_at", "next_attempt_at", "scheduled_at",
                                            "preempt_deadline", "progress_updated_at", "held_at"};
// Hash fields holding JSON text written by the broker.
constexpr const char* kJsonFields[] = {"result", "error", "errors", "last_checkpoint", "checkpoints",
                                       "ext_ml_assigned_devices", "preemption", "progress", "progress_data",
                                       "progress_message",  // a JSON string
                                       "parent_results"};  // results of the steps before
}  // namespace

const std::string& JobRecord::get(std::string_view name) const {
  auto it = fields.find(name);
  return it == fields.end() ? kEmpty : it->second;
}

std::optional<std::int64_t> JobRecord::get_int(std::string_view name) const {
  auto it = fields.find(name);
  if (it == fields.end()) return std::nullopt;
  // The leading integer, as std::stoll read it (the scripts and the broker write plain
  // integers; a fraction's tail is ignored), without its exception on bad text.
  std::int64_t value = 0;
  const auto& text = it->second;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), value);
  if (r.ec != std::errc()) return std::nullopt;
  return value;
}

int JobRecord::attempt() const { return static_cast<int>(get_int("attempt").value_or(0)); }

int JobRecord::priority_class_rank() const {
  return class_rank_of_score(static_cast<double>(get_int("rank_base").value_or(0)));
}

namespace {
// What stored_document leaves out when the document says it, and the envelope puts back.
const nlohmann::json& default_retry() {
  static const nlohmann::json retry = RetryPolicy{}.to_json();
  return retry;
}
const std::string& default_retry_text() {
  static const std::string text = default_retry().dump();
  return text;
}
constexpr const char* kFieldHeld[] = {"id", "queue", "type"};  // the job's fields hold them
}  // namespace

std::string JobRecord::stored_document(const nlohmann::json& document) {
  nlohmann::json doc = document;
  for (const char* f : kFieldHeld) doc.erase(f);
  if (auto it = doc.find("specversion"); it != doc.end() && *it == "1.0") doc.erase(it);
  if (auto it = doc.find("meta"); it != doc.end() && it->is_object() && it->empty()) doc.erase(it);
  if (auto it = doc.find("retry"); it != doc.end() && *it == default_retry()) doc.erase(it);
  return doc.dump();
}

nlohmann::json JobRecord::document() const {
  auto doc = nlohmann::json::parse(get("doc"), nullptr, false);
  if (!doc.is_object()) return nlohmann::json();  // unreadable: the callers' checks see no object
  for (const char* f : kFieldHeld)
    if (has(f)) doc[f] = get(f);
  if (!doc.contains("specversion")) doc["specversion"] = "1.0";
  if (!doc.contains("meta")) doc["meta"] = nlohmann::json::object();
  if (!doc.contains("retry")) doc["retry"] = default_retry();
  return doc;
}

int JobRecord::priority() const {
  if (auto n = get_int("priority")) return static_cast<int>(*n);
  const auto doc = nlohmann::json::parse(get("doc"), nullptr, false);
  const auto it = doc.is_object() ? doc.find("priority") : doc.end();
  return doc.is_object() && it != doc.end() && it->is_number_integer() ? it->get<int>() : 0;
}

int JobRecord::gpu_count() const {
  if (auto n = get_int("gpus")) return static_cast<int>(*n);
  try {
    return ml::parse_requirements(document()).gpu_count();
  } catch (const std::exception&) {
    return 0;  // a document no longer valid under today's rules: no GPUs to show
  }
}

nlohmann::json JobRecord::envelope() const { return nlohmann::json::parse(envelope_text().str(), nullptr, false); }

ObjectText JobRecord::envelope_text() const {
  // The document as the broker stored it (PushService: the serializer's compact text);
  // anything else is read through the parser, and what is not an object is dropped.
  auto doc = ObjectText::from_text(get("doc"));
  if (!doc) {
    const auto parsed = nlohmann::json::parse(get("doc"), nullptr, false);
    doc = parsed.is_object() ? ObjectText(parsed) : ObjectText();
  }
  ObjectText& out = *doc;
  // What stored_document left out, back (a job stored before holds it already).
  for (const char* f : kFieldHeld)
    if (has(f) && !out.has(f)) out.put_string(f, get(f));
  if (!out.has("specversion")) out.put_string("specversion", "1.0");
  if (!out.has("meta")) out.put("meta", "{}");
  if (!out.has("retry")) out.put("retry", default_retry_text());
  out.put_string("id", id());
  out.put_string("state", state());
  out.put_int("attempt", attempt());
  for (const char* f : kTimestampFields) {
    auto ms = get_int(f);
    if (!ms) continue;
    // A timestamp the producer sent (scheduled_at) stays as written while it still names the same instant.
    const auto sent = out.value_text(f);
    bool as_sent = false;
    if (!sent.empty() && sent.front() == '"') {
      const auto value = nlohmann::json::parse(sent, nullptr, false);
      as_sent = value.is_string() && parse_rfc3339(value.get<std::string>()) == ms;
    }
    if (!as_sent) out.put_string(f, format_rfc3339(*ms));
  }
  for (const char* f : kJsonFields) {
    auto it = fields.find(f);
    if (it == fields.end() || it->second.empty()) continue;
    const auto value = nlohmann::json::parse(it->second, nullptr, false);
    out.put_json(f, value.is_discarded() ? nlohmann::json(it->second) : value);  // a damaged field as its text, never invalid JSON
  }
  if (has("worker_id")) out.put_string("worker_id", get("worker_id"));
  if (has("workflow_id")) out.put_string("workflow_id", get("workflow_id"));
  if (has("held_by")) out.put_string("held_by", get("held_by"));  // hold.lua: who holds it
  if (has("replaced_by")) out.put_string("replaced_by", get("replaced_by"));  // a unique PUSH with on_conflict replace cancelled it
  if (auto n = get_int("preemption_count")) out.put_int("preemption_count", *n);
  if (auto n = get_int("borrowed_gpus")) out.put_int("borrowed_gpus", *n);  // placed above its queue's nominal share (cohorts)
  // The job's durable-execution checkpoint, so the worker that fetches it
  // again resumes from it (ojs-durable-execution.md 6.1). Kept once the job ended,
  // until deleted or the job is purged: the public conformance cases read it back
  // after the ACK (the spec's 5.2 would drop it then).
  if (auto seq = get_int("durable_sequence")) {
    const auto state_value = nlohmann::json::parse(get("durable_state"), nullptr, false);
    out.put_json("checkpoint", {{"state", state_value.is_discarded() ? nlohmann::json(get("durable_state")) : state_value},
                                {"sequence", *seq}});
  }
  if (auto n = get_int("retry_delay_ms")) out.put_int("retry_delay_ms", *n);  // fail.lua: the backoff before this retry
  // Its record of use, summed over its attempts: resource-microseconds, exact.
  nlohmann::json usage;
  for (const auto& r : kUsageResources)
    if (auto us = get_int(std::string("usage_") + r.name + "_us")) {
      if (usage.is_null() && out.has("usage")) usage = nlohmann::json::parse(out.value_text("usage"), nullptr, false);
      usage[std::string(r.name) + "_us"] = *us;
    }
  if (!usage.is_null()) out.put_json("usage", usage);
  return out;
}

JobRecord JobRecord::from_flat_array(const RedisValue& v) {
  JobRecord r;
  // A later pair overrides an earlier one; a nil value deletes the field (_lib.lua job_reply).
  for (std::size_t i = 0; i + 1 < v.elements.size(); i += 2) {
    if (v.elements[i + 1].is_nil()) r.fields.erase(v.elements[i].str);
    else r.fields[v.elements[i].str] = v.elements[i + 1].str;
  }
  return r;
}

std::vector<std::string> JobRecord::read_fields(const std::string& job_key, const std::vector<std::string>& names) {
  std::vector<std::string> cmd{"HMGET", job_key};
  cmd.insert(cmd.end(), names.begin(), names.end());
  return cmd;
}

JobRecord JobRecord::from_fields(const std::vector<std::string>& names, const std::vector<RedisValue>& values) {
  JobRecord r;
  for (std::size_t k = 0; k < values.size() && k < names.size(); ++k)
    if (!values[k].is_nil()) r.fields[names[k]] = values[k].str;
  return r;
}

std::vector<int> device_list(const std::string& json_text) {
  if (json_text.empty()) return {};
  const auto devices = nlohmann::json::parse(json_text, nullptr, false);
  std::vector<int> out;
  if (!devices.is_array()) return out;
  for (const auto& d : devices)
    if (d.is_number_integer()) out.push_back(d.get<int>());
  return out;
}

std::optional<JobRecord::Load> JobRecord::load_on(const std::string& worker_id) const {
  Load load;
  const auto& s = state();
  if (has("gang_workers")) {  // a member holds its share while the gang forms (available) and runs (active)
    if (s != "active" && s != "available") return std::nullopt;
    const auto members = nlohmann::json::parse(get("gang_members"), nullptr, false);
    if (!members.is_array()) return std::nullopt;
    const auto member = std::find_if(members.begin(), members.end(), [&](const nlohmann::json& m) {
      return m.is_object() && m.value("worker_id", std::string()) == worker_id;
    });
    if (member == members.end()) return std::nullopt;
    load.gpus = member->value("gpus", 0);
    load.devices = device_list(member->value("devices", std::string()));
  } else {
    // A cancelled job whose process is still stopping (stop_action) weighs on its worker
    // as it did running: nothing else goes on its devices before the worker reports it gone.
    if ((s != "active" && !(s == "cancelled" && has("stop_action"))) || get("worker_id") != worker_id) return std::nullopt;
    // A cancelled job still stopping had its charge released with the budget: its
    // GPUs are the document's (a job stored before also holds them as a field).
    load.gpus = s == "cancelled" && !has("charged_gpus") ? gpu_count() : held_gpus();
    load.devices = device_list(get("ext_ml_assigned_devices"));
  }
  nlohmann::json doc = document();
  if (!doc.is_object()) doc = {{"id", id()}};
  load.labels = ml::job_labels(doc);
  load.anti_affinity = ml::job_anti_affinity(doc);
  load.demand = ml::job_demand(doc);
  return load;
}

std::vector<std::string> JobRecord::gang_workers() const {
  std::vector<std::string> out;
  if (!has("gang_workers")) return out;
  const auto workers = nlohmann::json::parse(get("gang_workers"), nullptr, false);
  if (!workers.is_array()) return out;
  for (const auto& w : workers) out.push_back(w.is_string() ? w.get<std::string>() : std::string());
  return out;
}

bool JobRecord::has_gang_member(const std::string& worker_id) const {
  const auto workers = gang_workers();
  return std::find(workers.begin(), workers.end(), worker_id) != workers.end();
}

}  // namespace ojs::broker
