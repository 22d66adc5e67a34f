#include "broker/jobs/fetch_request.hpp"

#include <algorithm>

#include "ojs/core/envelope.hpp"
#include "ojs/core/error.hpp"
#include "ojs/core/time.hpp"
#include "ojs/ml/capabilities.hpp"

namespace ojs::broker {

using nlohmann::json;

FetchRequest FetchRequest::parse(const json& body, int max_count) {
  if (!body.is_object()) throw invalid_field("$", "request body must be a JSON object");
  FetchRequest r;
  if (body.contains("pool") && !body["pool"].is_null()) {
    if (!body["pool"].is_string() || !is_valid_queue_name(body["pool"].get<std::string>()))
      throw invalid_field("pool", "must be a pool name matching ^[a-z0-9][a-z0-9.-]*$");
    r.pool = body["pool"].get<std::string>();
  }
  if (!body.contains("queues")) {
    if (r.pool.empty()) throw invalid_field("queues", "is required (or name the worker's pool in pool)");
  } else if (!body["queues"].is_array() || body["queues"].empty()) {
    throw invalid_field("queues", "must be a non-empty array of queue names");
  }
  for (const auto& q : body.value("queues", json::array())) {
    if (!q.is_string() || !is_valid_queue_name(q.get<std::string>()))
      throw invalid_field("queues", "each queue name must match ^[a-z0-9][a-z0-9.-]*$");
    r.queues.push_back(q.get<std::string>());
  }
  if (body.contains("count")) {
    if (!body["count"].is_number_integer() || body["count"].get<long long>() < 1)
      throw invalid_field("count", "must be an integer >= 1");
    r.count = static_cast<int>(std::min<long long>(body["count"].get<long long>(), max_count));
  }
  if (body.contains("worker_id")) {
    r.worker_id = require_worker_id(body["worker_id"], "worker_id");
  } else {
    r.worker_id = "anonymous";
  }
  if (body.contains("visibility_timeout_ms")) {
    const auto& v = body["visibility_timeout_ms"];
    if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > kMaxDurationMs)
      throw invalid_field("visibility_timeout_ms", "must be an integer between 0 and " + std::to_string(kMaxDurationMs));
    r.visibility_timeout_ms = body["visibility_timeout_ms"].get<long long>();
  }
  if (body.contains("capabilities") && !body["capabilities"].is_null()) {
    if (!body["capabilities"].is_object()) throw invalid_field("capabilities", "must be an object");
    r.capabilities = body["capabilities"];
    r.capabilities_text = r.capabilities->dump();
    ml::require_bounded_capabilities(*r.capabilities, r.capabilities_text.size());
  }
  return r;
}

}  // namespace ojs::broker
