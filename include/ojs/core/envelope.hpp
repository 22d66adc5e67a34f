// PUSH-side envelope rules of OJS core: what a producer may send, the defaults
// the server fills, and the retry arithmetic. Pure functions, no I/O.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ojs {

struct RetryPolicy {
  int max_attempts = 3;
  std::int64_t initial_interval_ms = 1000;
  double backoff_coefficient = 2.0;
  std::int64_t max_interval_ms = 5 * 60 * 1000;
  bool jitter = true;
  std::vector<std::string> non_retryable_errors;
  std::string on_exhaustion = "discard";  // discard | dead_letter
  std::string backoff_type = "exponential";  // exponential | linear | constant

  nlohmann::json to_json() const;
};

// A validated PUSH request. `document` is the job as INFO will show it minus the
// system-managed fields (state, attempt, timestamps): everything the producer
// sent, `options` flattened to top-level attributes, unknown attributes intact.
struct NewJob {
  std::string id;
  std::string type;
  std::string queue = "default";
  int priority = 0;
  RetryPolicy retry;
  std::optional<std::int64_t> timeout_ms;
  std::string timeout_field = "timeout_ms";  // how the producer gave it: timeout_ms, or the OJS `timeout` (seconds)
  std::optional<std::int64_t> scheduled_at_ms;
  std::optional<std::int64_t> expires_at_ms;
  std::optional<std::int64_t> visibility_timeout_ms;
  nlohmann::json document;
};

// Validates `body` against the OJS envelope rules; throws OjsError naming the
// field and the rule. `now_ms` resolves relative schedules ("+PT5S").
NewJob parse_enqueue_request(const nlohmann::json& body, std::int64_t now_ms);

RetryPolicy parse_retry_policy(const nlohmann::json& value, const std::string& field);

// Delay before attempt `attempt + 1` after `attempt` failed (attempt >= 1).
// `unit_random` in [0,1) drives jitter so callers (and tests) control randomness.
std::int64_t retry_delay_ms(const RetryPolicy& policy, int attempt, double unit_random);

bool is_valid_queue_name(const std::string& name);
// Worker ids: ^[A-Za-z0-9][A-Za-z0-9._@-]*$, at most 128 characters. No ':' or
// '/', so a worker id never names another worker's keys (ojs:worker:<id>:jobs).
bool is_valid_worker_id(const std::string& id);
inline constexpr const char* kWorkerIdRule = "must match ^[A-Za-z0-9][A-Za-z0-9._@-]*$ and be at most 128 characters";
// The worker id in `value` (a string obeying is_valid_worker_id); throws invalid_field naming `field`.
std::string require_worker_id(const nlohmann::json& value, const std::string& field);
bool is_valid_job_type(const std::string& type);

// System-managed attributes: a producer's values for these are ignored.
const std::vector<std::string>& system_managed_fields();

}  // namespace ojs
