#include "broker/jobs/reaper.hpp"

#include <nlohmann/json.hpp>

#include "broker/jobs/failure_policy.hpp"
#include "broker/jobs/job_service.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker {

using nlohmann::json;

int Reaper::reclaim_expired(const std::string& queue) {
  return reclaim(queue, reads_.expired_active(queue, now_ms(), 100), true);
}

int Reaper::reclaim_from_lost_workers(const std::string& queue, const std::set<std::string>& lost_workers) {
  std::vector<std::string> ids;
  for (const auto& [id, worker] : reads_.active_jobs(queue))
    if (lost_workers.count(worker)) ids.push_back(id);
  return reclaim(queue, ids, false);
}

int Reaper::end_stops_of_lost_worker(const std::string& worker_id, const std::vector<PreemptionMarkView>& marks) {
  int ended = 0;
  for (const auto& m : marks)
    if (m.action != "preempt" && transitions_.process_gone(m.queue, m.job_id, worker_id)) ++ended;
  return ended;
}

int Reaper::reclaim(const std::string& queue, const std::vector<std::string>& ids, bool require_expired) {
  int reclaimed = 0;
  for (const auto& id : ids) {
    auto snapshot = reads_.get(queue, id);
    if (!snapshot || snapshot->state() != "active") continue;
    const auto worker = snapshot->get("worker_id");
    const auto exec_deadline = snapshot->get_int("execution_deadline");
    json error;
    FailureCause cause = FailureCause::lost_reservation;
    if (!require_expired) {
      error = {{"code", "worker_lost"}, {"type", "worker_death"}, {"message", "worker " + worker + " stopped sending heartbeats"}};
    } else if (exec_deadline && *exec_deadline <= now_ms()) {
      error = {{"code", "timeout"}, {"message", "job exceeded its execution timeout on worker " + worker}};
      cause = FailureCause::handler;  // the job ran too long: a failure of the job, with backoff
    } else {
      error = {{"code", "visibility_timeout"},
               {"message", "worker " + worker + " did not finish or heartbeat before its visibility timeout"}};
    }
    error["retryable"] = true;
    FailurePlan plan;
    try {
      plan = plan_failure(*snapshot, error, false, cause);
    } catch (const std::exception& e) {  // a poison job (unreadable retry policy) ends in the dead letter, the pass goes on
      plan = plan_failure(*snapshot, {{"code", "invalid_job"}, {"retryable", false},
                                      {"message", std::string("job cannot be retried: ") + e.what()}}, false,
                          FailureCause::handler, true);
    }
    const Transition t =
        transitions_.fail(*snapshot, plan.outcome, plan.due_ms, plan.error.dump(), plan.errors.dump(), require_expired);
    if (t.status == TransitionStatus::ok) {
      dispatch_workflow_callbacks(workflows_, t.job);
      ++reclaimed;
    }
  }
  return reclaimed;
}

}  // namespace ojs::broker
