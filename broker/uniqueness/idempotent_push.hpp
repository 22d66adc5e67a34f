// PUSH under an Idempotency-Key (ojs-bulk-operations.md §10, applied to PUSH): the first
// request's job is stored under an id the key remembers for 24 hours; a retry with the
// same key and the same body gets that job (stored now if the first attempt never was:
// push.lua stores an id once), and the same key with another body is a 409. A PUSH
// refused with a 4xx stored nothing and gives the key back, so a corrected retry may
// use it; after a 5xx (an unknown outcome) the key stays, and the retry settles it.
#pragma once
#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <string>

#include "broker/store/idempotency_store.hpp"
#include "broker/uniqueness/unique_push.hpp"

namespace ojs::broker {

inline constexpr std::chrono::hours kIdempotencyRetention{24};  // the spec's minimum, §10.2

// How the PUSH is made and a stored job found (the API's, with its block wait and scope).
struct IdempotentPushSteps {
  std::function<PushResult(const nlohmann::json& body)> push;
  std::function<bool(const std::string& job_id)> stored;
};

struct IdempotentPushOutcome {
  PushResult pushed;             // the job stored by this request (when replayed_job_id is empty)
  std::string replayed_job_id;   // a retry: the job the key's first request stored
};

// The Idempotency-Key header's rule: 1-256 visible ASCII characters; 400 naming it otherwise.
void check_idempotency_key(const std::string& key);

// `tenant`: the caller's tenant scope ("" = none): keys of different tenants never meet.
IdempotentPushOutcome push_once(IdempotencyStore& store, const std::string& key, const std::string& tenant,
                                nlohmann::json body, const IdempotentPushSteps& steps);

}  // namespace ojs::broker
