// The dead letter of each queue: list (newest first), size, and the actions on
// one job: retry (attempt reset, available again), discard (deleted), and
// retry_finished (a completed, discarded or cancelled job back to available).
#pragma once
#include <string>
#include <vector>

#include "broker/store/job_store.hpp"
#include "broker/store/redis_client.hpp"

namespace ojs::broker {

class DeadLetterStore {
 public:
  explicit DeadLetterStore(RedisPool& redis) : redis_(redis) {}

  std::vector<JobRecord> list(const std::string& queue, int offset, int limit);
  long long size(const std::string& queue);
  Transition act(const std::string& queue, const std::string& id, const std::string& action);

 private:
  RedisPool& redis_;
};

}  // namespace ojs::broker
