// Unique-job PUSH in the store: reads who holds a uniqueness key, decides the
// conflict policy against the holder (push_unique.lua), takes the key
// (unique_claim.lua), cancels a replaced holder (push_unique.lua again) and pushes
// the job (push.lua): one slot per call (see unique_store.cpp).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "broker/store/job_store.hpp"
#include "broker/store/redis_client.hpp"

namespace ojs::broker {

struct UniquePushOutcome {
  // contended: the key changed hands on every round (many concurrent PUSHes): nothing was stored
  enum class Kind { created, conflict, ignored, duplicate_id, contended } kind = Kind::created;
  JobRecord job;            // created: the new job; ignored: the holder
  std::string holder_id;    // conflict
  std::string holder_state; // conflict
};

class UniqueStore {
 public:
  explicit UniqueStore(RedisPool& redis) : redis_(redis) {}
  // `job` as for push_batch; the policy's key, states, period and on_conflict.
  UniquePushOutcome push(const BatchJob& job, const std::string& uniqueness_key, const std::vector<std::string>& states,
                         std::optional<std::int64_t> period_ms, const std::string& on_conflict);

 private:
  RedisPool& redis_;
};

}  // namespace ojs::broker
