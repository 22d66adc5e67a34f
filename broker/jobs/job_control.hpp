// An operator's hand on a waiting job (Slurm's scontrol hold / release /
// update, BullMQ's changePriority): hold it out of scheduling, release it back where
// it was, change its priority and ext_ml_* attributes. An update is validated as
// PUSH validates (PushService::prepare on the changed document: the same errors
// naming the field, the queue's limits and allow-lists) and stored with its new
// requirement class in one script (update_job.lua).
#pragma once
#include <nlohmann/json.hpp>

#include <string>

#include "broker/jobs/job_service.hpp"
#include "broker/jobs/push_service.hpp"
#include "broker/store/job_reads.hpp"
#include "broker/store/job_control_store.hpp"

namespace ojs::broker {

class JobControl {
 public:
  JobControl(JobService& jobs, PushService& push, JobReads& reads, JobControlStore& store)
      : jobs_(jobs), push_(push), reads_(reads), store_(store) {}

  // `who`: the caller's identity name, kept on the job as held_by. -> envelope
  nlohmann::json hold(const std::string& id, const std::string& who);
  nlohmann::json release(const std::string& id, const std::string& who);
  // PATCH body: `priority` and ext_ml_* attributes (null removes one). -> envelope
  nlohmann::json update(const std::string& id, const nlohmann::json& patch);

 private:
  JobService& jobs_;  // the job's queue, or 404
  PushService& push_;  // an update is validated as PUSH validates
  JobReads& reads_;
  JobControlStore& store_;
};

// The PATCH body's rules, before the job is read: a non-empty object of `priority`
// and ext_ml_* attributes other than those fixed at PUSH (kept apart for unit tests).
void check_job_patch(const nlohmann::json& patch);

}  // namespace ojs::broker
