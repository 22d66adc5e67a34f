#include "broker/progress/progress_service.hpp"

#include <algorithm>

#include "broker/store/progress_store.hpp"
#include "ojs/core/error.hpp"

namespace ojs::broker {

using nlohmann::json;

json report_progress(ProgressSources& s, const std::string& job_id, const json& body, std::int64_t default_visibility_ms) {
  if (!body.is_object()) throw invalid_field("$", "request body must be a JSON object");
  std::optional<double> value;
  if (body.contains("progress") && !body["progress"].is_null()) {
    if (!body["progress"].is_number()) throw invalid_field("progress", "must be a number between 0.0 and 1.0");
    value = std::clamp(body["progress"].get<double>(), 0.0, 1.0);  // out-of-range values are clamped (5.1)
  }
  json data = body.contains("data") ? body["data"] : json(nullptr);
  if (!data.is_null() && !data.is_object()) throw invalid_field("data", "must be an object");
  std::string message;  // JSON text of the string, "" = none
  if (body.contains("message") && !body["message"].is_null()) {
    if (!body["message"].is_string()) throw invalid_field("message", "must be a string");
    message = body["message"].dump();
    if (data.is_null()) data = json::object();
    data["message"] = body["message"];  // also where releases before the `message` field put it
  }
  if (!value && data.is_null()) throw invalid_field("progress", "progress, data or message is required");
  std::string worker;
  if (body.contains("worker_id")) {
    if (!body["worker_id"].is_string() || body["worker_id"].get<std::string>().empty())
      throw invalid_field("worker_id", "must be a non-empty string");
    worker = body["worker_id"].get<std::string>();
  }
  const auto queue = s.directory.queue_of(job_id);
  if (!queue) throw job_not_found(job_id);
  ProgressStore& store = s.progress;
  const auto outcome = store.report(*queue, job_id, worker, value, data.is_null() ? std::string() : data.dump(), default_visibility_ms,
                                     message);
  if (outcome.kind == ProgressOutcome::Kind::not_found) throw job_not_found(job_id);
  // As ACK: a worker that does not hold the job neither writes its progress nor extends it.
  if (outcome.kind == ProgressOutcome::Kind::conflict)
    throw OjsError(ErrorCode::conflict, "cannot report progress of job " + job_id + ": " + outcome.reason,
                   {{"job_id", job_id}, {"worker_id", worker}});
  json out = read_progress(s, job_id);
  out["accepted"] = outcome.kind == ProgressOutcome::Kind::recorded;
  if (outcome.kind == ProgressOutcome::Kind::ignored) out["reason"] = outcome.reason;
  return out;
}

json read_progress(ProgressSources& s, const std::string& job_id) {
  auto record = s.reads.get(job_id);
  if (!record) throw job_not_found(job_id);
  const auto job = record->envelope();
  return {{"job_id", job_id},
          {"state", job.value("state", "")},
          {"progress", job.contains("progress") ? job["progress"] : json(nullptr)},
          {"data", job.contains("progress_data") ? job["progress_data"] : json(nullptr)},
          {"message", job.contains("progress_message") ? job["progress_message"] : json(nullptr)},
          {"updated_at", job.contains("progress_updated_at") ? job["progress_updated_at"] : json(nullptr)}};
}

}  // namespace ojs::broker
