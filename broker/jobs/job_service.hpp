// The OJS job transitions a client or worker asks for by id (ACK, FAIL, CANCEL,
// BEAT): validation and decisions here, atomic transitions in the store. The
// other operations have their own services: PushService (PUSH), FetchService
// (FETCH), JobViews (INFO and the diagnosis), Reaper (attempts whose worker went
// quiet); failure_policy.hpp decides what a failure does.
#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "ojs/core/error.hpp"
#include "ojs/core/object_text.hpp"
#include "broker/store/gang_store.hpp"
#include "broker/store/job_directory.hpp"
#include "broker/store/job_reads.hpp"
#include "broker/store/job_store.hpp"
#include "broker/store/workflow_store.hpp"

namespace ojs::broker {

// 404 naming the job: no job has this id (or the caller may not see it).
OjsError job_not_found(const std::string& id);

// The NACK error type of a job the worker stopped on a failed GPU (its XID policy):
// requeued without consuming an attempt, whatever the request's `requeue`.
inline constexpr const char* kGpuFaultType = "gpu_fault";

// The transition that ended a batch's last job marked its callbacks
// due; they are enqueued right after (the maintenance loop retries what a failure
// here leaves due). Returns `job`.
const JobRecord& dispatch_workflow_callbacks(WorkflowStore& workflows, const JobRecord& job);

class JobService {
 public:
  JobService(JobStore& transitions, JobDirectory& directory, JobReads& reads, WorkflowStore& workflows, GangStore& gangs)
      : transitions_(transitions), directory_(directory), reads_(reads), workflows_(workflows), gangs_(gangs) {}

  // -> envelope. A running job's worker is told to stop its process (kill: SIGKILL at
  // once, else SIGTERM and the job's grace); its devices stay charged until then.
  nlohmann::json cancel(const std::string& id, bool kill = false);
  // worker_id (optional, may be empty) makes the transition conditional on that
  // worker still holding the job.
  // -> the job's envelope as text (the stored document is not parsed)
  ObjectText ack(const std::string& id, const nlohmann::json* result, const std::string& worker_id = {});
  // BEAT: extends the visibility of the listed jobs this worker holds; the ids extended.
  std::vector<std::string> extend(const std::string& worker_id, std::int64_t visibility_ms, const std::vector<std::string>& ids);
  // BEAT's reply: for each of `ids` that is a running gang this worker is a member
  // of, its rendezvous as the member sees it now (gang_rendezvous), so a member of an
  // elastic gang learns a resize.
  nlohmann::json gang_rendezvous_of(const std::string& worker_id, const std::vector<std::string>& ids);
  nlohmann::json fail(const std::string& id, const nlohmann::json& error, bool requeue, const std::string& worker_id = {});
  // BEAT: the members this worker was told to leave (`leaving`: job ids) that its
  // heartbeat no longer lists among the jobs it runs have left: each is released as
  // its NACK would release it (the gang runs on, resized). The ids released.
  std::vector<std::string> end_leaves_not_running(const std::string& worker_id, const std::vector<std::string>& leaving,
                                                  const std::vector<std::string>& running);

  // A transition's job, or the OjsError its status means (404, 409 naming the state).
  static JobRecord checked(const Transition& t, const std::string& id, const char* operation);
  // The job's queue, or 404 naming the job.
  std::string queue_of_or_404(const std::string& id);

 private:
  JobStore& transitions_;
  JobDirectory& directory_;
  JobReads& reads_;
  WorkflowStore& workflows_;
  GangStore& gangs_;
};

}  // namespace ojs::broker
