// Reads of a queue's job indexes for listings (admin job listing): ids in the
// order of each index, never the job hashes (JobReads::get_many reads those);
// and the upkeep of the finished index (retention trim, purge).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "broker/store/job_store.hpp"

namespace ojs::broker {

// The two fields the tenant counts read of a job.
struct StateAndTenant {
  std::string state, tenant;
};

class JobIndexStore {
 public:
  explicit JobIndexStore(RedisPool& redis) : redis_(redis) {}
  // Available jobs in FETCH order across the queue's classes (lowest rank first).
  std::vector<std::string> available(const std::string& queue, const ClassSet& classes, int limit);
  std::vector<std::string> active(const std::string& queue, int limit);     // soonest visibility deadline first
  std::vector<std::string> dead(const std::string& queue, int limit);       // newest first
  std::vector<std::string> delayed(const std::string& queue, int limit);    // scheduled and retryable, soonest first
  std::vector<std::string> on_hold(const std::string& queue, int limit);    // held (pending), oldest hold first
  // The size of the active, delayed, dead or on_hold index (the listing's totals).
  long long count(const std::string& queue, const std::string& index);
  // scheduled and retryable among the delayed jobs: the state of each of the
  // first `limit` is read (the rest, past the bound, count as scheduled).
  std::pair<long long, long long> delayed_split(const std::string& queue, int limit);
  // state and tenant of each job, one HMGET each in one pipeline (not the whole
  // hash: a tenant count reads thousands); nullopt for a job that is gone.
  std::vector<std::optional<StateAndTenant>> states_and_tenants(const std::string& queue, const std::vector<std::string>& ids);

  // Finished jobs of one terminal state (keys.hpp finished), newest first,
  // finished at or after `since_ms`; the count is of the same range.
  std::vector<std::string> finished(const std::string& queue, const std::string& state, std::int64_t since_ms, int limit);
  long long finished_count(const std::string& queue, const std::string& state, std::int64_t since_ms);
  // Index entries past the retention (finished before cutoff_ms, or beyond the newest
  // max_jobs) leave the index; the jobs stay. Returns the entries dropped.
  long long trim_finished(const std::string& queue, const std::string& state, std::int64_t cutoff_ms, long long max_jobs);
  // purge_finished.lua: up to `limit` jobs of the state finished before `before_ms`
  // are deleted; returns their ids (the caller drops them from the job directory).
  std::vector<std::string> purge_finished(const std::string& queue, const std::string& state, std::int64_t before_ms, int limit);

 private:
  void settle_finished(const std::string& queue, const std::string& state);
  RedisValue finished_read(const std::string& queue, const std::string& state, std::vector<std::string> command);
  std::vector<std::string> ids(const std::vector<std::string>& command);
  RedisPool& redis_;
};

}  // namespace ojs::broker
