// Active jobs as preemption sees them (shared by the controller's passes).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "broker/preemption/victims.hpp"
#include "broker/store/job_record.hpp"
#include "broker/store/job_reads.hpp"
#include "broker/store/job_store.hpp"
#include "broker/workers/worker_registry.hpp"
#include "ojs/ml/requirements.hpp"

namespace ojs::broker {

// The job's ext_ml_* requirements (nullopt when its document no longer parses).
std::optional<ml::Requirements> requirements_of(const JobRecord& job);
// What preemption needs to know of an active job (gpus/devices/labels are filled
// by the caller from where it found the job).
RunningJob running_job_from(const JobRecord& job, const std::string& queue, std::int64_t now);

// The members of a running elastic gang one at a time, as a budget sees them
// (`whole`: the gang as one charged job): each member but rank 0 with its worker and
// its GPUs (and their share of the GPU memory charged), `leaves` with the gang's
// spare when it may leave, `preempting` when it is leaving already. Empty for a job
// that is not an elastic gang that may shrink.
std::vector<RunningJob> gang_members_charged(const JobRecord& job, const RunningJob& whole);

// The queue budget as the store read it (limits and ledger), for the pure rules.
QueueBudget queue_budget(const BudgetUse& use);

// A worker placement can use: running (not quiet), heard from within
// --worker-dead-after-ms, with capabilities that parse. The preemption controller
// and the start estimate (broker/estimate) read the fleet through it.
struct LiveWorker {
  WorkerInfo info;
  ml::Capabilities caps;
  bool serves(const std::string& queue) const;  // FETCHes from it (or from any queue)
};
std::vector<LiveWorker> live_workers(WorkerRegistry& workers, std::int64_t now, std::int64_t dead_after_ms);
// The active jobs on a worker, each with its record (gpus, devices, labels: what it
// weighs there; a gang member's own share).
std::vector<std::pair<RunningJob, JobRecord>> running_records_on(JobReads& store, WorkerRegistry& workers,
                                                                 const std::string& worker_id, std::int64_t now);

}  // namespace ojs::broker
