// Reads of job hashes and of the active index: one job, several in one round
// trip, the jobs a worker holds, the active jobs past their deadline.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "broker/store/job_directory.hpp"
#include "broker/store/job_record.hpp"
#include "broker/store/redis_client.hpp"

namespace ojs::broker {

class JobReads {
 public:
  explicit JobReads(RedisPool& redis) : redis_(redis), directory_(redis) {}

  std::optional<JobRecord> get(const std::string& id);  // through the job directory
  // The queue of a job (the job directory), without reading the job.
  std::optional<std::string> queue_of(const std::string& id) { return directory_.queue_of(id); }
  std::optional<JobRecord> get(const std::string& queue, const std::string& id);
  // Several jobs in one round trip ({queue, id} each); nullopt where absent.
  std::vector<std::optional<JobRecord>> get_many(const std::vector<std::pair<std::string, std::string>>& jobs);
  // Active job ids with the worker holding each (dead-worker detection).
  std::vector<std::pair<std::string, std::string>> active_jobs(const std::string& queue);
  // Active jobs whose visibility deadline passed (the reaper's work list).
  std::vector<std::string> expired_active(const std::string& queue, std::int64_t now_ms, int limit);

 private:
  RedisPool& redis_;
  JobDirectory directory_;
};

}  // namespace ojs::broker
