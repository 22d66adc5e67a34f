// Reads of a queue's job indexes for listings (admin job listing): ids in the
// order of each index, never the job hashes (JobStore::get_many reads those).
#pragma once
#include <string>
#include <vector>

#include "broker/store/job_store.hpp"

namespace ojs::broker {

class JobIndexStore {
 public:
  explicit JobIndexStore(RedisPool& redis) : redis_(redis) {}
  // Available jobs in FETCH order across the queue's classes (lowest rank first).
  std::vector<std::string> available(const std::string& queue, const ClassSet& classes, int limit);
  std::vector<std::string> active(const std::string& queue, int limit);     // soonest visibility deadline first
  std::vector<std::string> dead(const std::string& queue, int limit);       // newest first
  std::vector<std::string> delayed(const std::string& queue, int limit);    // scheduled and retryable, soonest first

 private:
  std::vector<std::string> ids(const std::vector<std::string>& command);
  RedisPool& redis_;
};

}  // namespace ojs::broker
