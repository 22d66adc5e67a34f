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

IdempotentPushOutcome push_once(IdempotencyStore& store, const std::string& key, const std::string& tenant,
                                nlohmann::json body, const IdempotentPushSteps& steps) {
  check_idempotency_key(key);
  // A body PUSH refuses anyway (not an object, an id not a string) is refused as it is.
  if (!body.is_object() || (body.contains("id") && !body["id"].is_string())) return {steps.push(body), ""};
  // The request as the client meant it: members sorted (nlohmann's object order), so
  // a retry differing only in whitespace or member order is the same request.
  const std::string digest = sha256_hex(body.dump());
  const std::string scope = sha256_hex("push\n" + tenant + "\n" + key);
  if (!body.contains("id")) body["id"] = make_uuidv7();
  const IdempotencyRecord mine{body["id"].get<std::string>(), digest};

  const auto held = store.take(scope, mine, kIdempotencyRetention);
  if (!held) {
    try {
      return {steps.push(body), ""};
    } catch (const OjsError& e) {
      // Refused (4xx): nothing stored, the key is free for a corrected request. After a
      // 5xx the outcome may be unknown (a 504 may have stored it): the key stays.
      if (http_status(e.code()) < 500) store.give_back(scope, mine);
      throw;
    }
  }
  if (held->request_digest != digest)
    throw OjsError(ErrorCode::conflict, "Idempotency-Key was used with a different request body within 24 hours",
                   {{"field", "Idempotency-Key"}, {"rule", "a key names one request: resend that request, or use a new key"},
                    {"job_id", held->job_id}});
  if (steps.stored(held->job_id)) return {{}, held->job_id};
  // The first request's job was never stored (its reply was lost with it, or it is
  // still on its way): stored now under the same id, so at most one of them lands.
  body["id"] = held->job_id;
  try {
    return {steps.push(body), ""};
  } catch (const OjsError& e) {
    if (e.code() != ErrorCode::duplicate) throw;
    const auto& d = e.details();
    if (d.is_object() && d.contains("existing_job_id") && d["existing_job_id"] != held->job_id) throw;  // another job's unique key
    return {{}, held->job_id};  // the first request stored it meanwhile
  }
}

}  // namespace ojs::broker
