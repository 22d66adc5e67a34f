#include "ojs/core/envelope.hpp"

#include <algorithm>
#include <cmath>

#include "ojs/core/error.hpp"
#include "ojs/core/time.hpp"
#include "ojs/core/uuid.hpp"

namespace ojs {

namespace {

using nlohmann::json;

bool is_lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

std::int64_t require_duration(const json& v, const std::string& field) {
  if (!v.is_string()) throw invalid_field(field, "must be an ISO 8601 duration string such as \"PT1S\"");
  auto ms = parse_iso8601_duration(v.get<std::string>());
  if (!ms) throw invalid_field(field, "must be an ISO 8601 duration such as \"PT1S\" or \"PT5M\", at most 100 years");
  return *ms;
}

std::int64_t require_int(const json& v, const std::string& field, std::int64_t min, std::int64_t max) {
  if (!v.is_number_integer())
    throw invalid_field(field, "must be an integer");
  const auto n = v.get<std::int64_t>();
  if (n < min || n > max)
    throw invalid_field(field, "must be between " + std::to_string(min) + " and " + std::to_string(max));
  return n;
}

// scheduled_at accepts RFC 3339 or a relative "+PT5S".
std::int64_t require_time(const json& v, const std::string& field, std::int64_t now) {
  if (!v.is_string()) throw invalid_field(field, "must be an RFC 3339 timestamp string");
  const auto text = v.get<std::string>();
  if (!text.empty() && text[0] == '+') {
    auto ms = parse_iso8601_duration(std::string_view(text).substr(1));
    if (!ms) throw invalid_field(field, "relative schedule must be '+' followed by an ISO 8601 duration of at most 100 years");
    return now + *ms;
  }
  auto ms = parse_rfc3339(text);
  // Years 0000-9999 fit in int64 ms; the years before 1970 are refused so no deadline goes negative.
  if (ms && *ms < 0) throw invalid_field(field, "must not be before 1970-01-01T00:00:00Z");
  if (!ms) throw invalid_field(field, "must be an RFC 3339 timestamp with a zone, e.g. 2026-01-01T00:00:00Z");
  return *ms;
}

}  // namespace

json RetryPolicy::to_json() const {
  auto fmt = [](std::int64_t ms) {
    if (ms % 1000 == 0) return "PT" + std::to_string(ms / 1000) + "S";
    char buf[32];
    std::snprintf(buf, sizeof buf, "PT%.3fS", static_cast<double>(ms) / 1000.0);
    return std::string(buf);
  };
  json out = {{"max_attempts", max_attempts},
              {"initial_interval", fmt(initial_interval_ms)},
              {"backoff_coefficient", backoff_coefficient},
              {"max_interval", fmt(max_interval_ms)},
              {"jitter", jitter},
              {"on_exhaustion", on_exhaustion},
              {"backoff_type", backoff_type}};
  if (!non_retryable_errors.empty()) out["non_retryable_errors"] = non_retryable_errors;
  return out;
}

bool is_valid_queue_name(const std::string& q) {
  if (q.empty() || q.size() > 128 || !is_lower_alnum(q[0])) return false;
  return std::all_of(q.begin(), q.end(), [](char c) { return is_lower_alnum(c) || c == '-' || c == '.'; });
}

bool is_valid_worker_id(const std::string& id) {
  auto allowed = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '@' || c == '-';
  };
  if (id.empty() || id.size() > 128 || id[0] == '.' || id[0] == '_' || id[0] == '@' || id[0] == '-') return false;
  return std::all_of(id.begin(), id.end(), allowed);
}

std::string require_worker_id(const json& value, const std::string& field) {
  if (!value.is_string() || !is_valid_worker_id(value.get<std::string>())) throw invalid_field(field, kWorkerIdRule);
  return value.get<std::string>();
}

bool is_valid_job_type(const std::string& t) {
  // ^[a-z][a-z0-9_\-]*(\.[a-z][a-z0-9_\-]*)*$, at most 255 characters
  if (t.empty() || t.size() > 255) return false;
  bool segment_start = true;
  for (char c : t) {
    if (segment_start) {
      if (!(c >= 'a' && c <= 'z')) return false;
      segment_start = false;
    } else if (c == '.') {
      segment_start = true;
    } else if (!(is_lower_alnum(c) || c == '_' || c == '-')) {
      return false;
    }
  }
  return !segment_start;
}

const std::vector<std::string>& system_managed_fields() {
  static const std::vector<std::string> fields = {
      "state", "attempt", "created_at", "enqueued_at", "started_at", "completed_at", "cancelled_at",
      "discarded_at", "result", "error", "errors", "worker_id", "next_attempt_at", "retry_delay_ms",
      "last_checkpoint", "checkpoints", "preemption_count", "ext_ml_assigned_devices", "specversion"};
  return fields;
}

namespace {
// A well-formed value that breaks a retry-policy rule (ojs-retry.md's MUST reject):
// 422 validation_error, as the level-1 cases expect. A value of the wrong type, a
// malformed duration or a number too large to hold stays 400 invalid_request, as
// everywhere else in the envelope (ojs-http-binding.md §16.3): one status per kind.
OjsError broken_policy_rule(const std::string& field, const std::string& rule) {
  const auto form = invalid_field(field, rule);
  return OjsError(ErrorCode::validation_error, form.what(), form.details());
}
}  // namespace

RetryPolicy parse_retry_policy(const json& v, const std::string& field) {
  if (!v.is_object()) throw invalid_field(field, "must be an object");
  RetryPolicy p;
  if (v.contains("max_attempts")) {
    const auto& n = v["max_attempts"];
    if (!n.is_number_integer()) throw invalid_field(field + ".max_attempts", "must be an integer");
    if (n.is_number_unsigned() ? n.get<std::uint64_t>() > 1000000 : (n.get<std::int64_t>() < 0 || n.get<std::int64_t>() > 1000000))
      throw broken_policy_rule(field + ".max_attempts", "must be between 0 and 1000000");
    p.max_attempts = n.get<int>();
  }
  if (v.contains("initial_interval")) p.initial_interval_ms = require_duration(v["initial_interval"], field + ".initial_interval");
  if (v.contains("max_interval")) p.max_interval_ms = require_duration(v["max_interval"], field + ".max_interval");
  if (v.contains("backoff_coefficient")) {
    if (!v["backoff_coefficient"].is_number()) throw invalid_field(field + ".backoff_coefficient", "must be a number >= 1.0");
    p.backoff_coefficient = v["backoff_coefficient"].get<double>();
    if (!(p.backoff_coefficient >= 1.0)) throw broken_policy_rule(field + ".backoff_coefficient", "must be a number >= 1.0");
  }
  if (v.contains("jitter")) {
    if (!v["jitter"].is_boolean()) throw invalid_field(field + ".jitter", "must be a boolean");
    p.jitter = v["jitter"].get<bool>();
  }
  if (v.contains("non_retryable_errors")) {
    const auto& list = v["non_retryable_errors"];
    if (!list.is_array()) throw invalid_field(field + ".non_retryable_errors", "must be an array of strings");
    for (const auto& e : list) {
      if (!e.is_string()) throw invalid_field(field + ".non_retryable_errors", "must be an array of strings");
      p.non_retryable_errors.push_back(e.get<std::string>());
    }
  }
  if (v.contains("on_exhaustion")) {
    const auto& oe = v["on_exhaustion"];
    if (!oe.is_string() || (oe != "discard" && oe != "dead_letter"))
      throw invalid_field(field + ".on_exhaustion", "must be \"discard\" or \"dead_letter\"");
    p.on_exhaustion = oe.get<std::string>();
  }
  for (const char* key : {"backoff_type", "backoff_strategy"}) {
    if (!v.contains(key)) continue;
    const auto& bt = v[key];
    if (!bt.is_string() || (bt != "exponential" && bt != "linear" && bt != "constant"))
      throw invalid_field(field + "." + key, "must be one of exponential, linear, constant");
    p.backoff_type = bt.get<std::string>();
  }
  return p;
}

std::int64_t retry_delay_ms(const RetryPolicy& p, int attempt, double unit_random) {
  const int n = std::max(attempt, 1);
  double delay = static_cast<double>(p.initial_interval_ms);
  if (p.backoff_type == "exponential") delay *= std::pow(p.backoff_coefficient, n - 1);
  else if (p.backoff_type == "linear") delay *= n;
  delay = std::min(delay, static_cast<double>(p.max_interval_ms));
  // Jitter: uniformly within [0.5, 1.5) of the delay, capped again by max_interval.
  if (p.jitter) delay = std::min(delay * (0.5 + unit_random), static_cast<double>(p.max_interval_ms));
  return static_cast<std::int64_t>(std::max(0.0, delay));
}

namespace {

// Options may also appear top-level (as in the Job envelope); `options` wins.
struct OptionSource {
  const json& body;
  const json& options;
  const json* get(const char* key) const {
    if (const auto it = options.find(key); it != options.end()) return &*it;
    if (const auto it = body.find(key); it != body.end()) return &*it;
    return nullptr;
  }
};

// type, args, id and meta: the job's identity.
void parse_identity(const json& body, NewJob& job) {
  if (!body.contains("type")) throw invalid_field("type", "is required");
  if (!body["type"].is_string() || !is_valid_job_type(body["type"].get<std::string>()))
    throw invalid_field("type", "must match ^[a-z][a-z0-9_-]*(\\.[a-z][a-z0-9_-]*)*$ (dot-separated lowercase segments)");
  job.type = body["type"].get<std::string>();
  if (!body.contains("args")) throw invalid_field("args", "is required");
  if (!body["args"].is_array()) throw invalid_field("args", "must be a JSON array");
  if (body.contains("id")) {
    if (!body["id"].is_string() || !is_uuidv7(body["id"].get<std::string>()))
      throw invalid_field("id", "must be a lowercase UUIDv7 (xxxxxxxx-xxxx-7xxx-[89ab]xxx-xxxxxxxxxxxx)");
    job.id = body["id"].get<std::string>();
  } else {
    job.id = make_uuidv7();
  }
  if (body.contains("meta") && !body["meta"].is_object()) throw invalid_field("meta", "must be an object");
}

// The options the broker acts on: queue, priority, timeouts, times, retry policy.
// Returns the retry policy's field when the job names one.
const char* parse_scheduling_options(const OptionSource& option, std::int64_t now, NewJob& job) {
  if (const json* q = option.get("queue")) {
    if (!q->is_string() || !is_valid_queue_name(q->get<std::string>()))
      throw invalid_field("queue", "must match ^[a-z0-9][a-z0-9.-]*$ and be at most 128 characters");
    job.queue = q->get<std::string>();
  }
  if (const json* p = option.get("priority")) job.priority = static_cast<int>(require_int(*p, "priority", -100, 100));
  if (const json* t = option.get("timeout_ms")) {
    job.timeout_ms = require_int(*t, "timeout_ms", 0, kMaxDurationMs);
  } else if (const json* ts = option.get("timeout")) {  // OJS core: seconds (0 = the default); timeout_ms wins when both are sent
    job.timeout_ms = require_int(*ts, "timeout", 0, kMaxDurationMs / 1000) * 1000;
    job.timeout_field = "timeout";
  }
  if (const json* vt = option.get("visibility_timeout_ms")) job.visibility_timeout_ms = require_int(*vt, "visibility_timeout_ms", 0, kMaxDurationMs);
  else if (const json* vts = option.get("visibility_timeout")) job.visibility_timeout_ms = require_duration(*vts, "visibility_timeout");
  if (const json* s = option.get("scheduled_at")) job.scheduled_at_ms = require_time(*s, "scheduled_at", now);
  else if (const json* d = option.get("delay_until")) job.scheduled_at_ms = require_time(*d, "delay_until", now);
  if (const json* e = option.get("expires_at")) {
    job.expires_at_ms = require_time(*e, "expires_at", now);
    // A job already expired could never run: refused rather than stored to be discarded.
    if (*job.expires_at_ms <= now) throw invalid_field("expires_at", "must be in the future (the job would expire before it is stored)");
  }
  // The policy the job names (`retry`, or the older `retry_policy`); none: the default.
  const char* policy_field = option.get("retry") ? "retry" : "retry_policy";
  const json* named_policy = option.get(policy_field);
  if (!named_policy) return nullptr;
  job.retry = parse_retry_policy(*named_policy, policy_field);
  return policy_field;
}

// The options the document keeps as they are: tags, unique, metadata (into meta) and
// any other (rate_limit, future options), flattened.
void carry_options(const OptionSource& option, json& doc) {
  if (const json* tags = option.get("tags")) {
    if (!tags->is_array() || !std::all_of(tags->begin(), tags->end(), [](const json& t) { return t.is_string(); }))
      throw invalid_field("tags", "must be an array of strings");
    doc["tags"] = *tags;
  }
  if (const json* u = option.get("unique")) {
    if (!u->is_object()) throw invalid_field("unique", "must be an object");
    doc["unique"] = *u;
  }
  const json& options = option.options;
  if (options.contains("metadata")) {
    if (!options["metadata"].is_object()) throw invalid_field("options.metadata", "must be an object");
    json meta = doc.contains("meta") ? doc["meta"] : json::object();
    for (auto it = options["metadata"].begin(); it != options["metadata"].end(); ++it)
      if (!meta.contains(it.key())) meta[it.key()] = it.value();
    doc["meta"] = meta;
  }
  for (auto it = options.begin(); it != options.end(); ++it) {
    static const char* handled[] = {"queue", "priority", "timeout_ms", "visibility_timeout_ms", "visibility_timeout",
                                    "scheduled_at", "delay_until", "expires_at", "retry", "retry_policy", "tags",
                                    "unique", "metadata"};
    if (std::none_of(std::begin(handled), std::end(handled), [&](const char* h) { return it.key() == h; }))
      doc[it.key()] = it.value();
  }
}

// The stored document: system fields dropped, the parsed values written back.
void finish_document(const OptionSource& option, const NewJob& job, bool named_policy, json& doc) {
  for (const auto& f : system_managed_fields()) doc.erase(f);
  doc["specversion"] = "1.0";
  doc["id"] = job.id;
  doc["queue"] = job.queue;
  doc["priority"] = job.priority;
  doc["max_attempts"] = job.retry.max_attempts;
  // Most jobs name no policy: the default's JSON is built once (building it per job was
  // 17k instructions, a sixteenth of a PUSH: docs/benchmarks.md).
  static const json kDefaultRetry = RetryPolicy{}.to_json();
  doc["retry"] = named_policy ? job.retry.to_json() : kDefaultRetry;
  doc.erase("retry_policy");
  doc.erase("delay_until");
  if (job.timeout_ms) doc["timeout_ms"] = *job.timeout_ms;
  if (job.visibility_timeout_ms) doc["visibility_timeout_ms"] = *job.visibility_timeout_ms;
  doc.erase("visibility_timeout");
  // A producer's absolute timestamp comes back exactly as sent; only what we
  // computed (a relative "+PT5S", delay_until) is rendered by us.
  auto keep_or_format = [&](const char* key, const std::optional<std::int64_t>& ms) {
    if (!ms) return;
    const json* sent = option.get(key);
    const bool absolute = sent && sent->is_string() && !sent->get<std::string>().empty() && sent->get<std::string>()[0] != '+';
    doc[key] = absolute ? *sent : json(format_rfc3339(*ms));
  };
  keep_or_format("scheduled_at", job.scheduled_at_ms);
  keep_or_format("expires_at", job.expires_at_ms);
  if (!doc.contains("meta")) doc["meta"] = json::object();
}

}  // namespace

NewJob parse_enqueue_request(const json& body, std::int64_t now) {
  if (!body.is_object()) throw OjsError(ErrorCode::invalid_request, "request body must be a JSON object", {{"field", "$"}, {"rule", "must be an object"}});
  static const json kNoOptions = json::object();
  const auto options_at = body.find("options");
  const json& options = options_at == body.end() ? kNoOptions : *options_at;  // read in place, not copied
  if (!options.is_object()) throw invalid_field("options", "must be an object");
  const OptionSource option{body, options};
  NewJob job;
  parse_identity(body, job);
  const bool named_policy = parse_scheduling_options(option, now, job) != nullptr;
  json doc = body;
  doc.erase("options");
  carry_options(option, doc);
  finish_document(option, job, named_policy, doc);
  job.document = std::move(doc);
  return job;
}

}  // namespace ojs
