// Active jobs as preemption sees them.
#include "broker/preemption/running_jobs.hpp"

#include "broker/preemption/backfill.hpp"
#include "broker/preemption/preemption.hpp"

namespace ojs::broker {

using nlohmann::json;

std::optional<ml::Requirements> requirements_of(const JobRecord& job) {
  auto doc = json::parse(job.get("doc"), nullptr, false);
  if (!doc.is_object()) return std::nullopt;
  try {
    return ml::parse_requirements(doc);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// What preemption needs to know of an active job (gpus/devices/labels are filled
// by the caller from where it found the job).
RunningJob running_job_from(const JobRecord& job, const std::string& queue, std::int64_t now) {
  RunningJob r;
  r.job_id = job.id();
  r.queue = queue;
  r.worker_id = job.get("worker_id");
  r.class_rank = job.priority_class_rank();
  r.preempting = job.has("preempt_deadline");
  if (auto req = requirements_of(job)) {
    r.preemptible = req->scheduling.preemptible;
    r.grace_period_s = req->scheduling.grace_period_s;
    r.checkpoint_on_preempt = req->scheduling.checkpoint.on_preempt;
    r.declared_end_ms = declared_end(job.get_int("started_at").value_or(now), req->scheduling.estimated_duration_seconds,
                                     job.get_int("execution_deadline"));  // [backfill]
  }
  const auto since = std::max(job.get_int("started_at").value_or(now), job.get_int("last_checkpoint_at").value_or(0));
  r.lost_ms = std::max<std::int64_t>(0, now - since);
  return r;
}

}  // namespace ojs::broker
