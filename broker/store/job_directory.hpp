// The job directory (global slot): which queue each job id lives in, the ids a
// PUSH or a workflow reserves, and the entries of jobs gone.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "broker/store/redis_client.hpp"

namespace ojs::broker {

class JobDirectory {
 public:
  explicit JobDirectory(RedisPool& redis) : redis_(redis) {}

  // Registers id -> queue; false if the id is taken by a job that exists or a
  // workflow reserved it (reserve_workflow_ids).
  bool reserve_id(const std::string& id, const std::string& queue);
  // The same for several (id, queue), all or none: the first id that is taken, if
  // any, and then no id and no queue is registered (see job_directory.cpp).
  std::optional<std::string> reserve_ids(const std::vector<std::pair<std::string, std::string>>& ids);
  // reserve_ids, then marks the ids as the workflow's (keys::workflow_job_ids): its
  // later steps and callbacks are stored under them by the workflow alone.
  std::optional<std::string> reserve_workflow_ids(const std::string& workflow_id,
                                                  const std::vector<std::pair<std::string, std::string>>& ids);
  std::optional<std::string> queue_of(const std::string& id);
  // queue -> ids (unknown ids dropped), resolved in slices of one HMGET each.
  std::map<std::string, std::vector<std::string>> group_by_queue(const std::vector<std::string>& ids);
  void forget(const std::string& id);  // drops the id -> queue directory entry

 private:
  RedisPool& redis_;
};

}  // namespace ojs::broker
