// An operator's changes to a waiting job: hold, release (hold.lua,
// release.lua) and update (update_job.lua), each one script over the job's queue.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "broker/store/job_store.hpp"
#include "broker/store/redis_client.hpp"

namespace ojs::broker {

// What update_job.lua writes: the new class and rank, the fields PUSH derives from the
// document (`fields`), and the derived fields the new document no longer has (`gone`).
struct JobUpdate {
  std::string expected_doc;  // the document the update was computed from (else: stale)
  std::string class_id;
  std::string class_json;
  double rank_base = 0;
  std::string order_base;  // "" = none
  std::vector<std::pair<std::string, std::string>> fields;
  std::vector<std::string> gone;
};

class JobControlStore {
 public:
  explicit JobControlStore(RedisPool& redis) : redis_(redis) {}
  Transition hold(const std::string& queue, const std::string& id, const std::string& who);
  Transition release(const std::string& queue, const std::string& id, const std::string& who);
  Transition update(const std::string& queue, const std::string& id, const JobUpdate& update);

 private:
  RedisPool& redis_;
};

}  // namespace ojs::broker
