// Claims: claim.lua hands a worker the best jobs of the classes it may take;
// [gangs] claim_gang.lua holds it as a member of a forming gang or delivers a
// started one (store/claim_store.cpp).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "broker/store/job_store.hpp"
#include "broker/store/redis_client.hpp"

namespace ojs::broker {

// A page of a queue's class-head index (keys.hpp class_heads: each class with a
// waiting job, scored by its first job), best first, and whether the queue orders
// its jobs by fair share (then the heads' order is not the claim's).
struct ClassHeads {
  bool fair = false;
  std::vector<std::pair<std::string, double>> heads;  // class id, its head's score
};

class ClaimStore {
 public:
  explicit ClaimStore(RedisPool& redis) : redis_(redis) {}

  // record_held: each claimed job joins the worker's held set in the queue (keys.hpp
  // held), in the same script: a worker with capabilities has a load to keep.
  ClaimOutcome claim(const std::string& queue, const std::string& worker_id, std::optional<std::int64_t> request_visibility_ms,
                     std::int64_t default_visibility_ms, int count, const std::string& classes_version,
                     const std::vector<EligibleClass>& eligible, bool record_held);

  // The heads from `offset` (0-based), at most `count`, and the queue's policy: one
  // round trip. A snapshot for choosing which classes to judge; the claim checks
  // what must hold when it commits.
  ClassHeads class_heads(const std::string& queue, long long offset, long long count);

  // [gangs] claim_gang.lua: deliver a started gang to a held member, or hold this
  // worker as the next member of the queue's forming gang.
  GangClaim claim_gang(const std::string& queue, const GangMemberInfo& member, std::optional<std::int64_t> request_visibility_ms,
                       std::int64_t default_visibility_ms, const std::vector<GangClass>& eligible);

 private:
  RedisPool& redis_;
};

}  // namespace ojs::broker
