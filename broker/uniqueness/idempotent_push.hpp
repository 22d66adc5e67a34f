// PUSH and batch PUSH under an Idempotency-Key (ojs-bulk-operations.md §10): the first
// request's jobs are stored under ids the key remembers for 24 hours; a retry with the
// same key and the same body gets those jobs (stored now if the first attempt never
// was: push.lua and push_batch.lua store an id once), and the same key with another
// body is a 409. A request refused with a 4xx stored nothing and gives the key back,
// so a corrected retry may use it; after a 5xx (an unknown outcome) the key stays, and
// the retry settles it.
#pragma once
#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "broker/store/idempotency_store.hpp"

namespace ojs::broker {

inline constexpr std::chrono::hours kIdempotencyRetention{24};  // the spec's minimum, §10.2

// The Idempotency-Key header's rule: 1-256 visible ASCII characters; 400 naming it otherwise.
void check_idempotency_key(const std::string& key);

// One request under a key. `operation` scopes keys (push, push_batch: §10.2), `tenant`
// too ("" = none): keys of different tenants never meet.
struct IdempotentRequest {
  std::string operation;
  std::string key;
  std::string tenant;
};

// How the request is made: `ids` reads the job ids of the body, minting those it
// lacks (nullopt: a body the PUSH refuses anyway, sent as it is), `with_ids` writes
// ids into it, `store` sends it (throws OjsError), `stored` says whether every job
// of a list is stored.
struct IdempotentSteps {
  std::function<std::optional<std::vector<std::string>>(nlohmann::json& body)> ids;
  std::function<void(nlohmann::json& body, const std::vector<std::string>& ids)> with_ids;
  std::function<void(const nlohmann::json& body)> store;
  std::function<bool(const std::vector<std::string>& ids)> stored;
};

// The job ids of a PUSH body (its `id`) and of a batch PUSH body (each `jobs[i].id`),
// minting those absent; nullopt for a body of the wrong shape. And writing them back.
std::optional<std::vector<std::string>> push_ids(nlohmann::json& body);
void with_push_ids(nlohmann::json& body, const std::vector<std::string>& ids);
std::optional<std::vector<std::string>> batch_ids(nlohmann::json& body);
void with_batch_ids(nlohmann::json& body, const std::vector<std::string>& ids);

// Empty: this request's `store` ran and its reply is the caller's. Else a retry: the
// jobs its key's first request stored, to answer with.
std::vector<std::string> run_once(IdempotencyStore& records, const IdempotentRequest& request, nlohmann::json body,
                                  const IdempotentSteps& steps);

}  // namespace ojs::broker
