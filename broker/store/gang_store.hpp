// Running gangs beside the claim: the rendezvous each member of a gang is told in
// its heartbeat reply, so an elastic gang's resize reaches every member; and the
// members of an elastic gang that leave it (shrink instead of evict).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "broker/store/job_record.hpp"

#include "broker/store/redis_client.hpp"

namespace ojs::broker {

// A running gang as one member sees it (gang_facts.lua).
struct GangFacts {
  std::string job_id;
  std::string generation;    // "" on a gang started before generations were kept
  std::string members_json;  // gang_members: [{worker_id, rank, address, port, ...}] by rank
};

class GangStore {
 public:
  explicit GangStore(RedisPool& redis) : redis_(redis) {}
  // The jobs of `ids` (all of one queue) that are running gangs `worker_id` is a member of.
  std::vector<GangFacts> facts(const std::string& queue, const std::string& worker_id, const std::vector<std::string>& ids);

  // gang_leave.lua: the member on `worker_id` is told to leave the running elastic
  // gang (a preempt directive to that worker only). Its deadline, or the reason the
  // commit refused (the gang at its minimum counting members already leaving, rank 0,
  // not an elastic gang, already leaving, the job moved on).
  struct LeaveMark {
    std::optional<std::int64_t> deadline_ms;
    std::string refused;
  };
  LeaveMark mark_leaving(const std::string& queue, const std::string& job_id, const std::string& worker_id,
                         const std::string& preemptor, int grace_period_s, bool checkpoint);
  // gang_left.lua: a member told to leave is gone (its worker released the job, or its
  // deadline passed); the gang continues without it. The job as it runs on, or nullopt
  // when that member was not leaving (idempotent).
  std::optional<JobRecord> member_left(const std::string& queue, const std::string& job_id, const std::string& worker_id);

 private:
  RedisPool& redis_;
};

}  // namespace ojs::broker
