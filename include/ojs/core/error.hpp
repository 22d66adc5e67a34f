// The one error type that crosses module boundaries: it carries everything the
// HTTP edge needs to render an OJS error body (code, message, status, details).
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <stdexcept>
#include <string>

namespace ojs {

enum class ErrorCode {
  invalid_request,   // 400: malformed request or envelope rule broken
  invalid_payload,   // 400: body is not JSON at all
  validation_error,  // 422: well-formed but refused by a queue rule (limits)
  unauthorized,      // 401
  forbidden,         // 403
  not_found,         // 404
  method_not_allowed,// 405: known path, other method (the router adds Allow)
  conflict,          // 409: state conflict
  duplicate,         // 409: job id already exists
  queue_paused,      // 409
  payload_too_large, // 413
  rate_limited,      // 429
  queue_full,        // 429: the queue is at its max_depth (ojs-backpressure.md; code "QUEUE_FULL")
  internal_error,    // 500
  unavailable,       // 503: backend (Redis) unreachable
  unsupported,       // 422
  backend_timeout,   // 504: a write was sent and the backend did not answer in time: its outcome is unknown
};

const char* to_string(ErrorCode code);
int http_status(ErrorCode code);
bool is_retryable(ErrorCode code);

class OjsError : public std::runtime_error {
 public:
  OjsError(ErrorCode code, std::string message);
  OjsError(ErrorCode code, std::string message, const nlohmann::json& details);
  ~OjsError() override;
  OjsError(const OjsError&);
  OjsError& operator=(const OjsError&);

  ErrorCode code() const { return code_; }
  const nlohmann::json& details() const;
  // {"error": {"code", "type", "message", "retryable", "details"?, "hint", "docs_url"}}
  nlohmann::json to_json() const;

 private:
  ErrorCode code_;
  struct Details;
  Details* details_;
};

// The broker's backend (Redis) cannot be reached or answered what the broker
// cannot act on. The store throws its own subclass (StoreUnavailable); the HTTP
// edge and the metrics catch this base, so they answer 503 / ojs_redis_up 0
// without knowing the store.
class BackendUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Shorthand for the most common case: a field broke a rule.
// details = {"field": field, "rule": rule}; message names both. With `pointer`
// (RFC 6901, e.g. "/ml_limits/max_gpu_count") details carry it too.
OjsError invalid_field(const std::string& field, const std::string& rule);
OjsError invalid_field(const std::string& field, const std::string& rule, const std::string& pointer);

// The same error for a body nested under `prefix` (e.g. "job_template.", "fetch."):
// details.field and the message start with the prefix.
OjsError under_field(const std::string& prefix, const OjsError& error);

}  // namespace ojs
