// Checkpoint commit: validation here, the atomic write in checkpoint.lua.
#include "broker/auth/identity.hpp"
#include "broker/preemption/preemption.hpp"
#include "ojs/core/envelope.hpp"
#include "ojs/core/error.hpp"
#include "ojs/core/time.hpp"
#include "ojs/core/uuid.hpp"
#include "ojs/ml/requirements.hpp"
#include "ojs/ml/storage_uri.hpp"

namespace ojs::broker {

using nlohmann::json;

namespace {

// Steps and epochs up to 2^53 - 1: every JSON reader (JavaScript included) reads them exactly.
std::int64_t non_negative_integer(const json& body, const char* field, bool required) {
  constexpr std::int64_t kMax = (1LL << 53) - 1;
  const std::string rule = "must be an integer between 0 and " + std::to_string(kMax);
  if (!body.contains(field)) {
    if (required) throw invalid_field(field, "is required");
    return -1;
  }
  const auto& v = body[field];
  if (v.is_number_unsigned()) {
    if (v.get<std::uint64_t>() > static_cast<std::uint64_t>(kMax)) throw invalid_field(field, rule);
    return static_cast<std::int64_t>(v.get<std::uint64_t>());
  }
  if (v.is_number_integer()) {
    if (v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > kMax) throw invalid_field(field, rule);
    return v.get<std::int64_t>();
  }
  // 1200.0 is accepted; the range is checked before the cast (out of range is undefined).
  if (!v.is_number_float()) throw invalid_field(field, rule);
  const double d = v.get<double>();
  if (!(d >= 0 && d <= static_cast<double>(kMax)) || d != static_cast<double>(static_cast<std::int64_t>(d))) throw invalid_field(field, rule);
  return static_cast<std::int64_t>(d);
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
  // Either a key relative to the job's storage URI, or a full URI: parsed and
  // normalised first, then held against the allowed prefixes.
  auto key = body["storage_key"].get<std::string>();
  if (!ml::is_safe_relative_key(key)) {
    const auto uri = ml::normalise_storage_uri(key);
    if (!uri)
      throw invalid_field("storage_key", "must be a relative key without '..' segments or a URI s3://bucket/..., gs://, az://, file:///...");
    if (!prefixes.empty() && !ml::storage_uri_allowed(*uri, prefixes))
      throw invalid_field("storage_key", "must lie under an allowed checkpoint prefix");
    key = *uri;
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

// ojs-durable-execution.md 9.1: a checkpoint's state is capped at 1 MB.
constexpr std::size_t kMaxStateBytes = 1048576;

namespace {

// The job id checked and the worker a checkpoint of either kind is saved as ('' =
// any holder): a bound token saves only as itself; the script then checks the holder.
std::string saving_worker(const std::string& id, const json& body) {
  if (!is_uuidv7(id)) throw invalid_field("job_id", "must be a lowercase UUIDv7 job id");
  std::string worker;
  if (body.is_object() && body.contains("worker_id")) worker = require_worker_id(body["worker_id"], "worker_id");
  auth::authorize_worker_id(worker);
  return worker;
}

}  // namespace

json Checkpoints::commit(const std::string& id, const json& body) {
  if (body.is_object() && body.contains("state")) return save_state(id, body);  // the other flavour, same route
  const std::string worker = saving_worker(id, body);
  const json checkpoint = checkpoint_document(id, body, prefixes_);
  auto record = jobs_.get(id);
  if (!record) throw OjsError(ErrorCode::not_found, "job " + id + " not found", {{"job_id", id}});
  int max_count = 3;
  const auto doc = record->document();
  if (doc.is_object()) {
    try {
      max_count = ml::parse_requirements(doc).scheduling.checkpoint.max_count;
    } catch (const std::exception&) {
    }
  }
  const Transition t = transitions_.checkpoint(record->queue(), id, worker, checkpoint.dump(), max_count);
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

namespace {

// The caller's view of a job: 404 when it is absent or another tenant's (as absent as a missing one).
JobRecord visible_job(JobReads& jobs, const std::string& id) {
  auto job = jobs.get(id);
  const auto scope = auth::tenant_scope();
  if (!job || (!scope.empty() && job->get("tenant") != scope))
    throw OjsError(ErrorCode::not_found, "job " + id + " not found", {{"job_id", id}});
  return std::move(*job);
}

}  // namespace

json Checkpoints::read(const std::string& id) {
  const auto job = visible_job(jobs_, id);
  const auto envelope = job.envelope();
  json out = {{"job_id", id},
              {"last_checkpoint", envelope.value("last_checkpoint", json(nullptr))},
              {"checkpoints", envelope.value("checkpoints", json::array())},
              {"preemption_count", envelope.value("preemption_count", 0)}};
  // The envelope carries the durable checkpoint (JobRecord::envelope_text).
  if (const auto it = envelope.find("checkpoint"); it != envelope.end() && it->is_object()) {
    const json durable = {{"job_id", id},
                          {"state", it->value("state", json(nullptr))},
                          {"sequence", it->value("sequence", 0)},
                          {"created_at", format_rfc3339(job.get_int("durable_at").value_or(0))}};
    for (const auto& [k, v] : durable.items()) out[k] = v;
    out["checkpoint"] = durable;
  } else if (out["last_checkpoint"].is_null()) {
    throw OjsError(ErrorCode::not_found, "job " + id + " has no checkpoint", {{"job_id", id}});
  }
  return out;
}

json Checkpoints::save_state(const std::string& id, const json& body) {
  if (!body.is_object()) throw invalid_field("$", "request body must be a JSON object");
  if (!body.contains("state")) throw invalid_field("state", "is required (any JSON value)");
  const std::string worker = saving_worker(id, body);
  const std::string state = body["state"].dump(-1, ' ', false, json::error_handler_t::strict);
  if (state.size() > kMaxStateBytes)
    throw OjsError(ErrorCode::payload_too_large,
                   "checkpoint state is " + std::to_string(state.size()) + " bytes as JSON; the limit is " + std::to_string(kMaxStateBytes),
                   {{"field", "state"}, {"limit_bytes", kMaxStateBytes}});
  // Its queue from the directory: the job itself (with up to 1 MiB of earlier state) is not read.
  const auto queue = jobs_.queue_of(id);
  if (!queue) throw OjsError(ErrorCode::not_found, "job " + id + " not found", {{"job_id", id}});
  const Transition t = transitions_.durable_checkpoint(*queue, id, true, worker, state);
  if (t.status == TransitionStatus::not_found) throw OjsError(ErrorCode::not_found, "job " + id + " not found", {{"job_id", id}});
  if (t.status != TransitionStatus::ok)
    throw OjsError(ErrorCode::conflict, "cannot save a checkpoint for job " + id + " in state '" + t.detail + "'",
                   {{"job_id", id}, {"state", t.detail}});
  const json saved = {{"job_id", id}, {"sequence", std::stoll(t.detail)}, {"created_at", format_rfc3339(now_ms())}};
  json out = saved;
  out["checkpoint"] = saved;
  return out;
}

json Checkpoints::delete_state(const std::string& id) {
  const auto job = visible_job(jobs_, id);
  const Transition t = transitions_.durable_checkpoint(job.queue(), id, false, "", "");
  if (t.status == TransitionStatus::not_found) throw OjsError(ErrorCode::not_found, "job " + id + " not found", {{"job_id", id}});
  return {{"deleted", true}, {"job_id", id}};
}

}  // namespace ojs::broker
