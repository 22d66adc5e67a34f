// PUSH with unique jobs: a job carrying a `unique` policy goes through
// push_unique.lua (check, conflict policy and insert in one step); others are
// stored as plain PUSH stores them.
#pragma once
#include <nlohmann/json.hpp>

#include "broker/jobs/push_service.hpp"
#include "broker/store/idempotency_store.hpp"
#include "broker/store/unique_store.hpp"

namespace ojs::broker {

struct PushResult {
  ObjectText job;             // the new job, or the existing one when deduplicated (its envelope as text)
  bool deduplicated = false;  // on_conflict "ignore" found a holder: nothing enqueued (HTTP 200)
  std::vector<std::string> warnings;  // the prepared job's (PreparedJob::warnings)
};

// Throws OjsError: 409 duplicate {existing_job_id, existing_job_state, uniqueness_key}
// for `reject` (and for replacing an active job), 400 for an invalid policy.
// What a PUSH with a uniqueness policy uses (wired in app.cpp).
struct UniquePushSources {
  PushService& push;
  UniqueStore& unique;
  IdempotencyStore& idempotency;  // PUSH under an Idempotency-Key (idempotent_push.hpp)
};

PushResult push_job(UniquePushSources& s, const nlohmann::json& body);

}  // namespace ojs::broker
