#include "ojs/core/error.hpp"

#include <nlohmann/json.hpp>

namespace ojs {

struct OjsError::Details {
  nlohmann::json value;
};

const char* to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::invalid_request: return "invalid_request";
    case ErrorCode::invalid_payload: return "invalid_payload";
    case ErrorCode::validation_error: return "validation_error";
    case ErrorCode::unauthorized: return "unauthorized";
    case ErrorCode::forbidden: return "forbidden";
    case ErrorCode::not_found: return "not_found";
    case ErrorCode::method_not_allowed: return "method_not_allowed";
    case ErrorCode::conflict: return "conflict";
    case ErrorCode::duplicate: return "duplicate";
    case ErrorCode::queue_paused: return "queue_paused";
    case ErrorCode::payload_too_large: return "payload_too_large";
    case ErrorCode::rate_limited: return "rate_limited";
    case ErrorCode::queue_full: return "QUEUE_FULL";  // ojs-backpressure.md §7.1 and ojs-errors.md spell it so
    case ErrorCode::internal_error: return "internal_error";
    case ErrorCode::unavailable: return "backend_unavailable";
    case ErrorCode::backend_timeout: return "backend_timeout";
    case ErrorCode::unsupported: return "unsupported";
  }
  return "internal_error";
}

int http_status(ErrorCode code) {
  switch (code) {
    case ErrorCode::invalid_request:
    case ErrorCode::invalid_payload: return 400;
    case ErrorCode::unauthorized: return 401;
    case ErrorCode::forbidden: return 403;
    case ErrorCode::not_found: return 404;
    case ErrorCode::method_not_allowed: return 405;
    case ErrorCode::conflict:
    case ErrorCode::duplicate:
    case ErrorCode::queue_paused: return 409;
    case ErrorCode::payload_too_large: return 413;
    case ErrorCode::validation_error:
    case ErrorCode::unsupported: return 422;
    case ErrorCode::rate_limited:
    case ErrorCode::queue_full: return 429;
    case ErrorCode::internal_error: return 500;
    case ErrorCode::unavailable: return 503;
    case ErrorCode::backend_timeout: return 504;
  }
  return 500;
}

bool is_retryable(ErrorCode code) {
  return code == ErrorCode::unavailable || code == ErrorCode::rate_limited || code == ErrorCode::queue_full ||
         code == ErrorCode::internal_error;
}

namespace {
const char* hint_for(ErrorCode code) {
  switch (code) {
    case ErrorCode::not_found: return "Check the id; jobs are addressed by the UUIDv7 returned from PUSH.";
    case ErrorCode::conflict: return "The job is not in a state that allows this operation; GET it to see its state.";
    case ErrorCode::duplicate: return "A job with this id exists; omit the id to let the server generate one.";
    case ErrorCode::invalid_request:
    case ErrorCode::invalid_payload: return "Fix the field named in details and resend.";
    case ErrorCode::validation_error: return "A rule refuses this value; details names the field and rule (or the queue limit).";
    case ErrorCode::unavailable: return "The backend store is unreachable; retry with backoff.";
    case ErrorCode::backend_timeout:
      return "The request may still take effect: do not resend it as it was. For a PUSH resend it with \"id\": details.job_id "
             "(201: stored now; 409 duplicate: the first attempt stored it), or GET /ojs/v1/jobs/{details.job_id}.";
    case ErrorCode::unauthorized: return "Send 'Authorization: Bearer <token>'.";
    case ErrorCode::forbidden: return "Your token's role does not allow this operation.";
    case ErrorCode::rate_limited: return "Slow down and retry after the Retry-After interval.";
    case ErrorCode::queue_full: return "The queue is at its max_depth; retry after the Retry-After interval, or send OJS-Block-Timeout to a block queue.";
    case ErrorCode::method_not_allowed: return "Use one of the methods listed in the Allow header.";
    default: return "See the broker's docs/http-api.md.";
  }
}
// A 404 hints at what was not found: the job-id hint only when a job was looked up.
const char* not_found_hint(const nlohmann::json& details) {
  if (details.is_object() && details.contains("job_id")) return hint_for(ErrorCode::not_found);
  if (details.is_object() && details.contains("queue")) return "Check the queue name; GET /ojs/v1/queues lists the queues.";
  if (details.is_object() && details.contains("cron_name")) return "Check the cron name; GET /ojs/v1/cron lists the registrations.";
  if (details.is_object() && !details.empty()) return "Check the name or id in the path.";
  return "Check the method and path; docs/http-api.md lists the endpoints.";
}

}  // namespace

OjsError::OjsError(ErrorCode code, std::string message)
    : std::runtime_error(std::move(message)), code_(code), details_(new Details{nlohmann::json::object()}) {}

OjsError::OjsError(ErrorCode code, std::string message, const nlohmann::json& details)
    : std::runtime_error(std::move(message)), code_(code), details_(new Details{details}) {}

OjsError::~OjsError() { delete details_; }
OjsError::OjsError(const OjsError& o) : std::runtime_error(o), code_(o.code_), details_(new Details{*o.details_}) {}
OjsError& OjsError::operator=(const OjsError& o) {
  if (this != &o) {
    std::runtime_error::operator=(o);
    code_ = o.code_;
    *details_ = *o.details_;
  }
  return *this;
}

const nlohmann::json& OjsError::details() const { return details_->value; }

nlohmann::json OjsError::to_json() const {
  nlohmann::json err = {
      {"code", to_string(code_)},
      {"type", to_string(code_)},
      {"message", what()},
      {"retryable", is_retryable(code_)},
      {"hint", code_ == ErrorCode::not_found ? not_found_hint(details_->value)
               // A 503 that names its reason (busy, draining, a limit) is the broker's, not the store's.
               : code_ == ErrorCode::unavailable && details_->value.is_object() && details_->value.contains("reason")
                   ? "The broker is busy or draining, not its store: retry after the Retry-After interval."
               : code_ == ErrorCode::duplicate && details_->value.is_object() && details_->value.contains("uniqueness_key")
                   ? "A job with the same uniqueness key exists (details.existing_job_id); see the job's unique policy."
                   : hint_for(code_)},
      {"docs_url", std::string("https://openjobspec.org/errors#") + to_string(code_)},
  };
  if (details_->value.is_object() && !details_->value.empty()) err["details"] = details_->value;
  if (code_ == ErrorCode::queue_full && details_->value.is_object())  // ojs-backpressure.md §7.1 puts them in the error
    for (const char* key : {"queue", "depth", "bound", "strategy"})
      if (details_->value.contains(key)) err[key] = details_->value[key];
  return {{"error", err}};
}

OjsError invalid_field(const std::string& field, const std::string& rule) { return invalid_field(field, rule, ""); }

OjsError invalid_field(const std::string& field, const std::string& rule, const std::string& pointer) {
  nlohmann::json details = {{"field", field}, {"rule", rule}};
  if (!pointer.empty()) details["pointer"] = pointer;
  return OjsError(ErrorCode::invalid_request, field + ": " + rule, std::move(details));
}

OjsError under_field(const std::string& prefix, const OjsError& error) {
  nlohmann::json details = error.details();
  if (details.is_object() && details.contains("field") && details["field"].is_string())
    details["field"] = prefix + details["field"].get<std::string>();
  return OjsError(error.code(), prefix + error.what(), details);
}

}  // namespace ojs
