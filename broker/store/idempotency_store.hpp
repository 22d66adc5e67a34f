// Idempotency-Key records (ojs-bulk-operations.md §10, for PUSH and batch PUSH): the
// jobs a request sent under a key stored, with a digest of its request, kept 24 hours, so a client's retry
// after a timeout or a lost reply gets that job instead of storing a second one.
#pragma once
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "broker/store/redis_client.hpp"

namespace ojs::broker {

struct IdempotencyRecord {
  std::vector<std::string> job_ids;  // the job a PUSH stores, or a batch's jobs in order
  std::string request_digest;        // SHA-256 hex of the request it was sent with
};

class IdempotencyStore {
 public:
  explicit IdempotencyStore(RedisPool& redis) : redis_(redis) {}
  // Takes `scope` (keys::idempotency's argument) for `record` unless another request
  // holds it: then the record it holds. One command (SET NX GET).
  std::optional<IdempotencyRecord> take(const std::string& scope, const IdempotencyRecord& record, std::chrono::seconds ttl);
  // The PUSH was refused and stored nothing: the key is free again (if still ours).
  void give_back(const std::string& scope, const IdempotencyRecord& record);

 private:
  RedisPool& redis_;
};

}  // namespace ojs::broker
