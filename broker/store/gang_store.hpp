// Reads of running gangs beside the claim: the rendezvous each member of a gang is
// told in its heartbeat reply, so an elastic gang's resize reaches every member.
#pragma once
#include <string>
#include <vector>

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

 private:
  RedisPool& redis_;
};

}  // namespace ojs::broker
