// The reads the start estimate needs beyond the job and worker stores:
// the queue's ready sets in score order, the few fields it reads of waiting jobs, and
// the learned run times ACK keeps per job type (keys.hpp run_times). Nothing here
// writes: the estimate, the what-if and the forecast change nothing.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "broker/store/job_record.hpp"
#include "broker/store/job_store.hpp"
#include "broker/store/redis_client.hpp"

namespace ojs::broker {

struct ReadyEntry {
  std::string id;
  std::string class_id;
  double score = 0;
};

class EstimateStore {
 public:
  explicit EstimateStore(RedisPool& redis) : redis_(redis) {}

  // The job's score in its class's ready set (nullopt: it is not ready).
  std::optional<double> ready_score(const std::string& queue, const std::string& class_id, const std::string& id);
  // The first `limit` ready jobs of the queue (all its classes), in score order.
  // `more`: whether jobs were left out.
  std::vector<ReadyEntry> ready_jobs(const std::string& queue, const ClassSet& classes, int limit, bool* more = nullptr);
  // How many ready jobs of the queue score below `score`.
  long long ready_below(const std::string& queue, const ClassSet& classes, double score);
  // The fields of waiting jobs the estimate reads (class, type, tenant, state,
  // estimated_duration_s, timeout_ms, next_attempt_at, enqueued_at), one round trip; nullopt where absent.
  std::vector<std::optional<JobRecord>> waiting_fields(const std::string& queue, const std::vector<std::string>& ids);
  // How long the queue's last `limit` completed jobs that declared a duration ran
  // against it: (completed_at - started_at) / estimated_duration_s, newest first, one
  // read of the finished index and one round trip for the jobs (purged ones are left out).
  std::vector<double> ran_vs_declared(const std::string& queue, std::size_t limit);
  // The learned run times (ms, newest first) of each job type, one round trip.
  std::map<std::string, std::vector<long long>> run_times(const std::string& queue, const std::vector<std::string>& types);

 private:
  RedisPool& redis_;
};

}  // namespace ojs::broker
