#include "broker/jobs/failure_policy.hpp"

#include <random>

#include "ojs/core/envelope.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker {

using nlohmann::json;

namespace {

double unit_random() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

// The error object kept on the job: what the worker sent, normalised so that
// code, type, message and retryable are always present.
json normalise_error(const json& error, int attempt) {
  json e = error.is_object() ? error : json::object();
  if (!e.contains("message") || !e["message"].is_string())
    e["message"] = error.is_string() ? error.get<std::string>() : std::string("job failed");
  if (!e.contains("code") || !e["code"].is_string()) e["code"] = e.contains("type") && e["type"].is_string() ? e["type"] : json("handler_error");
  if (!e.contains("type") || !e["type"].is_string()) e["type"] = e["code"];
  if (!e.contains("retryable") || !e["retryable"].is_boolean()) e["retryable"] = true;
  e["attempt"] = attempt;
  e["occurred_at"] = format_rfc3339(now_ms());
  return e;
}

// ojs-retry.md §6.2: the worker's error `type` (also its `code`, which older workers
// send alone) against `non_retryable_errors`, exactly or by a "prefix.*" entry.
bool matches_non_retryable(const RetryPolicy& policy, const json& error) {
  for (const char* key : {"type", "code"}) {
    const std::string value = error.value(key, std::string());
    for (const auto& entry : policy.non_retryable_errors) {
      if (entry == value) return true;
      const bool prefix = entry.size() >= 2 && entry.compare(entry.size() - 2, 2, ".*") == 0;
      if (prefix && value.compare(0, entry.size() - 1, entry, 0, entry.size() - 1) == 0) return true;
    }
  }
  return false;
}

}  // namespace

bool replays_its_last_failure(const JobRecord& job, const json& error, bool requeue, const std::string& worker_id) {
  const auto& state = job.state();
  if (requeue || worker_id.empty() || job.get("worker_id") != worker_id) return false;
  if (state != "retryable" && state != "available" && state != "discarded") return false;
  json last = json::parse(job.get("error"), nullptr, false);
  if (!last.is_object()) return false;
  json again = normalise_error(error, job.attempt());
  last.erase("occurred_at");
  again.erase("occurred_at");
  return last == again;
}

FailurePlan plan_failure(const JobRecord& snapshot, const json& reported_error, bool requeue, FailureCause cause, bool poison) {
  FailurePlan plan;
  const int attempt = snapshot.attempt();
  const json doc = poison ? json() : snapshot.document();
  RetryPolicy policy =
      doc.is_object() && doc.contains("retry") ? parse_retry_policy(doc["retry"], "retry") : RetryPolicy{};
  if (poison) policy.on_exhaustion = "dead_letter";
  plan.error = normalise_error(reported_error, attempt);
  const bool non_retryable = !plan.error["retryable"].get<bool>() || matches_non_retryable(policy, plan.error);
  // The job's own bound: a field (jobs stored before), else its document's top-level
  // max_attempts (PUSH writes the one it resolved there), else its retry policy's.
  std::optional<std::int64_t> bound = snapshot.get_int("max_attempts");
  if (!bound && doc.is_object())
    if (const auto it = doc.find("max_attempts"); it != doc.end() && it->is_number_integer()) bound = it->get<std::int64_t>();
  const int max_attempts = static_cast<int>(bound.value_or(policy.max_attempts));
  if (requeue) {
    plan.outcome = "requeue";
  } else if (!non_retryable && attempt < max_attempts && cause == FailureCause::lost_reservation) {
    plan.outcome = "reclaim";
  } else if (!non_retryable && attempt < max_attempts) {
    plan.outcome = "retry";
    plan.delay_ms = retry_delay_ms(policy, attempt, unit_random());
    plan.due_ms = now_ms() + plan.delay_ms;
  } else {
    plan.outcome = policy.on_exhaustion == "dead_letter" ? "dead_letter" : "discard";
    // A job with committed checkpoints holds progress worth resuming: dead letter, never discard.
    if (!snapshot.get("last_checkpoint").empty()) plan.outcome = "dead_letter";
  }
  plan.errors = json::parse(snapshot.get("errors").empty() ? "[]" : snapshot.get("errors"), nullptr, false);
  if (!plan.errors.is_array()) plan.errors = json::array();
  if (!requeue) plan.errors.push_back(plan.error);
  return plan;
}

}  // namespace ojs::broker
