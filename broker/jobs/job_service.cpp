#include "broker/jobs/job_service.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "broker/jobs/failure_policy.hpp"
#include "broker/jobs/gang_rendezvous.hpp"
#include "ojs/core/envelope.hpp"
#include "ojs/core/uuid.hpp"

namespace ojs::broker {

using nlohmann::json;

OjsError job_not_found(const std::string& id) {
  return OjsError(ErrorCode::not_found, "job " + id + " not found", {{"job_id", id}});
}

namespace {

void require_job_id(const std::string& id, const char* field) {
  if (!is_uuidv7(id)) throw invalid_field(field, "must be a lowercase UUIDv7 job id");
}

}  // namespace

const JobRecord& dispatch_workflow_callbacks(WorkflowStore& workflows, const JobRecord& job) {
  if (!job.has("workflow_member")) return job;
  try {
    workflows.dispatch_due(job.queue(), job.get("workflow_id"));
  } catch (const std::exception& e) {
    spdlog::warn("workflow {}: enqueueing its due callbacks failed ({}); the maintenance loop retries", job.get("workflow_id"), e.what());
  }
  return job;
}

std::string JobService::queue_of_or_404(const std::string& id) {
  auto queue = directory_.queue_of(id);
  if (!queue) throw job_not_found(id);
  return *queue;
}

JobRecord JobService::checked(const Transition& t, const std::string& id, const char* operation) {
  switch (t.status) {
    case TransitionStatus::ok: return t.job;
    case TransitionStatus::not_found: throw job_not_found(id);
    case TransitionStatus::conflict:
      throw OjsError(ErrorCode::conflict, std::string("cannot ") + operation + " job " + id + " in state '" + t.detail + "'",
                     {{"job_id", id}, {"state", t.detail}});
    default:
      throw OjsError(ErrorCode::conflict, std::string("cannot ") + operation + " job " + id + ": it changed concurrently",
                     {{"job_id", id}});
  }
}

json JobService::cancel(const std::string& id, bool kill) {
  const auto queue = queue_of_or_404(id);
  return dispatch_workflow_callbacks(workflows_, checked(transitions_.cancel(queue, id, kill), id, kill ? "kill" : "cancel"))
      .envelope();
}

std::vector<std::string> JobService::extend(const std::string& worker_id, std::int64_t visibility_ms,
                                            const std::vector<std::string>& ids) {
  std::vector<std::string> extended;
  // One extend script per queue (one slot each), in slices: a huge heartbeat never holds Redis long.
  for (const auto& [queue, qids] : directory_.group_by_queue(ids))
    for (auto& id : transitions_.extend(queue, worker_id, visibility_ms, qids)) extended.push_back(std::move(id));
  return extended;
}

json JobService::gang_rendezvous_of(const std::string& worker_id, const std::vector<std::string>& ids) {
  json out = json::array();
  for (const auto& [queue, qids] : directory_.group_by_queue(ids))
    for (const auto& gang : gangs_.facts(queue, worker_id, qids)) {
      const json members = json::parse(gang.members_json, nullptr, false);
      const auto rank = gang_rank_of(members, worker_id);
      auto rendezvous = rank ? gang_rendezvous(members, *rank, gang.generation) : std::nullopt;
      if (!rendezvous) continue;
      (*rendezvous)["job_id"] = gang.job_id;
      out.push_back(std::move(*rendezvous));
    }
  return out;
}

ObjectText JobService::ack(const std::string& id, const json* result, const std::string& worker_id) {
  require_job_id(id, "job_id");
  const auto queue = queue_of_or_404(id);
  const auto result_json = result && !result->is_null() ? result->dump() : std::string();
  const Transition t = transitions_.ack(queue, id, result_json, worker_id);
  // A job cancelled while it ran and finished before its worker heard: the ACK says
  // its process is gone (its devices are free), and the result is not kept.
  if (t.status == TransitionStatus::conflict && !worker_id.empty()) transitions_.process_gone(queue, id, worker_id);
  return dispatch_workflow_callbacks(workflows_, checked(t, id, "acknowledge")).envelope_text();
}

namespace {

// Whether `worker_id`'s member of the job's elastic gang is told to leave (gang_leave.lua).
bool leaving_gang(const JobRecord& job, const std::string& worker_id) {
  if (!job.has("gang_leaving")) return false;
  const auto leaving = json::parse(job.get("gang_leaving"), nullptr, false);
  return leaving.is_object() && leaving.contains(worker_id);
}

}  // namespace

std::vector<std::string> JobService::end_leaves_not_running(const std::string& worker_id, const std::vector<std::string>& leaving,
                                                            const std::vector<std::string>& running) {
  std::vector<std::string> released;
  for (const auto& id : leaving) {
    if (std::find(running.begin(), running.end(), id) != running.end()) continue;
    try {
      fail(id, {{"code", "preempted"}, {"message", "left the elastic gang: its worker no longer runs it"}}, true, worker_id);
      released.push_back(id);
    } catch (const OjsError&) {  // gone or ended meanwhile: nothing left to release
    }
  }
  return released;
}

json JobService::fail(const std::string& id, const json& error, bool requeue, const std::string& worker_id) {
  require_job_id(id, "job_id");
  if (!error.is_null() && !error.is_object()) throw invalid_field("error", "must be an object with at least a message");
  // A GPU fault (the worker's XID policy stopped the job on a failed GPU) is the
  // hardware's, not the job's: requeued without consuming the attempt, and recorded.
  const bool gpu_fault = error.is_object() && error.value("type", std::string()) == kGpuFaultType;
  requeue = requeue || gpu_fault;
  const auto queue = queue_of_or_404(id);
  for (int tries = 0; tries < 3; ++tries) {
    auto snapshot = reads_.get(queue, id);
    if (!snapshot) throw job_not_found(id);
    if (snapshot->state() != "active") {
      // The worker of a job cancelled while it ran reports its process gone: the
      // devices it held are free from now on, and the job stays cancelled.
      if (!worker_id.empty() && snapshot->has("stop_action") && transitions_.process_gone(queue, id, worker_id))
        return snapshot->envelope();
      if (replays_its_last_failure(*snapshot, error, requeue, worker_id)) return snapshot->envelope();
      checked(Transition{TransitionStatus::conflict, snapshot->state(), {}}, id, "fail");
    }
    // A member told to leave its elastic gang releases only its own place: the gang runs on.
    if (!worker_id.empty() && leaving_gang(*snapshot, worker_id)) {
      if (auto running = gangs_.member_left(queue, id, worker_id)) return running->envelope();
      continue;  // it stopped leaving meanwhile (gone, or the gang ended): decide again
    }
    FailurePlan plan = plan_failure(*snapshot, error, requeue);
    if (gpu_fault) plan.errors.push_back(plan.error);
    const Transition t = transitions_.fail(*snapshot, plan.outcome, plan.due_ms,
                                     requeue && !gpu_fault ? std::string() : plan.error.dump(), plan.errors.dump(), false,
                                     worker_id);
    if (t.status == TransitionStatus::stale) continue;
    json envelope = dispatch_workflow_callbacks(workflows_, checked(t, id, "fail")).envelope();
    if (plan.outcome == "retry") envelope["retry_delay_ms"] = plan.delay_ms;  // the OpenAPI's NACK property
    return envelope;
  }
  throw OjsError(ErrorCode::conflict, "job " + id + " kept changing while failing it; retry", {{"job_id", id}});
}

}  // namespace ojs::broker
