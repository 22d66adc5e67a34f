// The reaper: jobs whose visibility deadline passed and jobs held by workers that
// stopped heartbeating return to `available` at once; a passed execution timeout
// retries with backoff. Either way the attempt counts, and exhausted jobs are
// discarded or dead-lettered (failure_policy.hpp).
#pragma once
#include <set>
#include <string>
#include <vector>

#include "broker/store/job_reads.hpp"
#include "broker/store/job_store.hpp"
#include "broker/store/worker_store.hpp"
#include "broker/store/workflow_store.hpp"

namespace ojs::broker {

class Reaper {
 public:
  Reaper(JobReads& reads, JobStore& transitions, WorkflowStore& workflows)
      : reads_(reads), transitions_(transitions), workflows_(workflows) {}

  int reclaim_expired(const std::string& queue);
  int reclaim_from_lost_workers(const std::string& queue, const std::set<std::string>& lost_workers);
  // A lost worker can report no process gone: the jobs cancelled while it ran them
  // stop weighing on it (their devices are free for when it returns). Returns how many.
  int end_stops_of_lost_worker(const std::string& worker_id, const std::vector<PreemptionMarkView>& marks);

 private:
  int reclaim(const std::string& queue, const std::vector<std::string>& ids, bool require_expired);

  JobReads& reads_;
  JobStore& transitions_;
  WorkflowStore& workflows_;
};

}  // namespace ojs::broker
