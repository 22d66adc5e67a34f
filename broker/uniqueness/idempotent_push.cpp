#include "broker/uniqueness/idempotent_push.hpp"

#include <algorithm>

#include "ojs/core/digest.hpp"
#include "ojs/core/error.hpp"
#include "ojs/core/uuid.hpp"

namespace ojs::broker {

void check_idempotency_key(const std::string& key) {
  const bool visible = std::all_of(key.begin(), key.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
  if (key.empty() || key.size() > 256 || !visible)
    throw OjsError(ErrorCode::invalid_request, "Idempotency-Key: must be 1 to 256 visible ASCII characters",
                   {{"field", "Idempotency-Key"}, {"rule", "1 to 256 visible ASCII characters"}});
}

namespace {
std::optional<std::string> id_of(nlohmann::json& job) {
  if (!job.is_object()) return std::nullopt;
  if (!job.contains("id")) job["id"] = make_uuidv7();
  if (!job["id"].is_string()) return std::nullopt;
  return job["id"].get<std::string>();
}
}  // namespace

std::optional<std::vector<std::string>> push_ids(nlohmann::json& body) {
  auto id = id_of(body);
  if (!id) return std::nullopt;
  return std::vector<std::string>{*id};
}

void with_push_ids(nlohmann::json& body, const std::vector<std::string>& ids) { body["id"] = ids.at(0); }

std::optional<std::vector<std::string>> batch_ids(nlohmann::json& body) {
  if (!body.is_object() || !body.contains("jobs") || !body["jobs"].is_array()) return std::nullopt;
  std::vector<std::string> ids;
  for (auto& job : body["jobs"]) {
    auto id = id_of(job);
    if (!id) return std::nullopt;
    ids.push_back(*id);
  }
  return ids;
}

void with_batch_ids(nlohmann::json& body, const std::vector<std::string>& ids) {
  for (std::size_t i = 0; i < ids.size(); ++i) body["jobs"][i]["id"] = ids[i];
}

std::vector<std::string> run_once(IdempotencyStore& records, const IdempotentRequest& request, nlohmann::json body,
                                  const IdempotentSteps& steps) {
  check_idempotency_key(request.key);
  // The request as the client meant it: members sorted (nlohmann's object order), so
  // a retry differing only in whitespace or member order is the same request.
  const std::string digest = sha256_hex(body.dump());
  auto ids = steps.ids(body);
  if (!ids) {
    steps.store(body);  // refused as it would be without a key
    return {};
  }
  const std::string scope = sha256_hex(request.operation + "\n" + request.tenant + "\n" + request.key);
  const IdempotencyRecord mine{*ids, digest};

  const auto held = records.take(scope, mine, kIdempotencyRetention);
  if (!held) {
    try {
      steps.store(body);
      return {};
    } catch (const OjsError& e) {
      // Refused (4xx): nothing stored, the key is free for a corrected request. After a
      // 5xx the outcome may be unknown (a 504 may have stored it): the key stays.
      if (http_status(e.code()) < 500) records.give_back(scope, mine);
      throw;
    }
  }
  if (held->request_digest != digest || held->job_ids.size() != ids->size())
    throw OjsError(ErrorCode::conflict, "Idempotency-Key was used with a different request body within 24 hours",
                   {{"field", "Idempotency-Key"}, {"rule", "a key names one request: resend that request, or use a new key"},
                    {"job_ids", held->job_ids}});
  if (steps.stored(held->job_ids)) return held->job_ids;
  // The first request's jobs were never stored (its reply was lost with it, or it is
  // still on its way): stored now under the same ids, so at most one of them lands.
  steps.with_ids(body, held->job_ids);
  try {
    steps.store(body);
    return {};
  } catch (const OjsError& e) {
    if (e.code() != ErrorCode::duplicate || !steps.stored(held->job_ids)) throw;
    return held->job_ids;  // the first request stored them meanwhile
  }
}

}  // namespace ojs::broker
