// The reads the start estimate needs beyond the job and worker stores:
// the queue's ready sets in score order, the few fields it reads of waiting jobs, and
// the learned run times ACK keeps per job type (keys.hpp run_times). One write: the
// first estimate answered for a waiting job is kept on it (note_estimate), so that
// start_at_p90 learns how late jobs started against it; nothing else is written.
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
  // What the queue's last `limit` completed jobs teach, newest first, one read of the
  // finished index and one round trip for the jobs (purged ones are left out):
  struct CompletedRuns {
    // of those that declared a duration: (completed_at - started_at) / estimated_duration_s;
    std::vector<double> ran_vs_declared;
    // of those asked about while they waited, on their first attempt: when, the late
    // start they were told and when they started (estimate::LateCalibration learns from it).
    struct Told {
      std::int64_t asked_ms = 0, late_ms = 0, started_ms = 0;
    };
    std::vector<Told> told;
  };
  CompletedRuns completed_runs(const std::string& queue, std::size_t limit);
  // Keeps the job's first answered estimate (asked at, the run's late start) on it
  // (estimate_note.lua): not on a job that is gone, not over an earlier one.
  void note_estimate(const std::string& queue, const std::string& id, std::int64_t asked_ms, std::int64_t late_ms);
  // The learned run times (ms, newest first) of each job type, one round trip.
  std::map<std::string, std::vector<long long>> run_times(const std::string& queue, const std::vector<std::string>& types);

 private:
  RedisPool& redis_;
};

}  // namespace ojs::broker
