// Checkpoint commit: validation here, the atomic write in checkpoint.lua.
#include "broker/preemption/preemption.hpp"
#include "ojs/core/error.hpp"
#include "ojs/core/time.hpp"
#include "ojs/core/uuid.hpp"
#include "ojs/ml/requirements.hpp"

namespace ojs::broker {

using nlohmann::json;

namespace {

std::int64_t non_negative_integer(const json& body, const char* field, bool required) {
  if (!body.contains(field)) {
    if (required) throw invalid_field(field, "is required");
    return -1;
  }
  const auto& v = body[field];
  const bool integral = v.is_number_integer() || (v.is_number_float() && v.get<double>() == static_cast<double>(static_cast<long long>(v.get<double>())));
  if (!integral || v.get<double>() < 0) throw invalid_field(field, "must be an integer >= 0");
  return static_cast<std::int64_t>(v.get<double>());
}

// The checkpoint as kept on the job: {job_id, epoch, step, loss, metrics, storage_key, created_at}.
json checkpoint_document(const std::string& id, const json& body, const std::vector<std::string>& prefixes) {
  if (!body.is_object()) throw invalid_field("$", "request body must be a JSON object");
  json c = {{"job_id", id}};
  if (auto epoch = non_negative_integer(body, "epoch", false); epoch >= 0) c["epoch"] = epoch;
  c["step"] = non_negative_integer(body, "step", true);
  if (body.contains("loss")) {
    if (!body["loss"].is_number()) throw invalid_field("loss", "must be a number");
    c["loss"] = body["loss"];
  }
  if (body.contains("metrics")) {
    if (!body["metrics"].is_object()) throw invalid_field("metrics", "must be an object");
    c["metrics"] = body["metrics"];
  }
  if (!body.contains("storage_key")) throw invalid_field("storage_key", "is required");
  if (!body["storage_key"].is_string() || body["storage_key"].get<std::string>().empty() ||
      body["storage_key"].get<std::string>().size() > 2048)
    throw invalid_field("storage_key", "must be a non-empty string of at most 2048 characters");
  const auto key = body["storage_key"].get<std::string>();
  if (key.find("://") != std::string::npos && !prefixes.empty()) {
    bool allowed = false;
    for (const auto& p : prefixes) allowed = allowed || key.rfind(p, 0) == 0;
    if (!allowed) throw invalid_field("storage_key", "must start with an allowed checkpoint prefix");
  }
  c["storage_key"] = key;
  if (body.contains("created_at")) {
    if (!body["created_at"].is_string() || !parse_rfc3339(body["created_at"].get<std::string>()))
      throw invalid_field("created_at", "must be an RFC 3339 timestamp");
    c["created_at"] = body["created_at"];
  } else {
    c["created_at"] = format_rfc3339(now_ms());
  }
  return c;
}

}  // namespace

json commit_checkpoint(JobStore& store, const std::string& id, const json& body, const std::vector<std::string>& prefixes) {
  if (!is_uuidv7(id)) throw invalid_field("job_id", "must be a lowercase UUIDv7 job id");
  std::string worker;
  if (body.is_object() && body.contains("worker_id")) {
    if (!body["worker_id"].is_string() || body["worker_id"].get<std::string>().empty())
      throw invalid_field("worker_id", "must be a non-empty string");
    worker = body["worker_id"].get<std::string>();
  }
  const json checkpoint = checkpoint_document(id, body, prefixes);
  auto record = store.get(id);
  if (!record) throw OjsError(ErrorCode::not_found, "job " + id + " not found", {{"job_id", id}});
  int max_count = 3;
  auto doc = json::parse(record->get("doc"), nullptr, false);
  if (doc.is_object()) {
    try {
      max_count = ml::parse_requirements(doc).scheduling.checkpoint.max_count;
    } catch (const std::exception&) {
    }
  }
  const Transition t = store.checkpoint(record->queue(), id, worker, checkpoint.dump(), max_count);
  if (t.status == TransitionStatus::not_found) throw OjsError(ErrorCode::not_found, "job " + id + " not found", {{"job_id", id}});
  if (t.status != TransitionStatus::ok)
    throw OjsError(ErrorCode::conflict, "cannot commit a checkpoint for job " + id + " in state '" + t.detail + "'",
                   {{"job_id", id}, {"state", t.detail}});
  const json envelope = t.job.envelope();
  return {{"job_id", id},
          {"last_checkpoint", envelope.value("last_checkpoint", json(nullptr))},
          {"checkpoints", envelope.value("checkpoints", json::array())},
          {"max_count", max_count}};
}

}  // namespace ojs::broker
