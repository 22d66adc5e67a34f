// When will a job start, and what would make it start: the snapshot the
// forward run needs (forecast.hpp), read from the stores, for the job diagnosis
// (`estimate`), POST /jobs/{id}/what-if and GET /queues/{name}/forecast. Nothing is
// written: a what-if edits a copy of the snapshot.
//
// The snapshot: live workers serving the queue with their capabilities and what runs
// on them (running_jobs.hpp, as the preemption controller reads them), each running
// job's end (started_at + ext_ml_estimated_duration_seconds, else its execution
// deadline, else the median of its type's last 64 run times in its queue, which ACK
// keeps), the queue's ready jobs in score order up to the job asked about (at most
// kMaxWaiting), its GPU budget and tenant quotas, how the queue's last completed
// jobs kept to their declared durations (estimate::Overruns), and the capacity holds
// of preemptions in progress (the run preempts as the controller does).
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "broker/config.hpp"
#include "broker/estimate/forecast.hpp"
#include "broker/scheduling/scheduler.hpp"
#include "broker/store/estimate_store.hpp"
#include "broker/store/job_reads.hpp"
#include "broker/store/preemption_store.hpp"
#include "broker/store/queue_directory.hpp"
#include "broker/store/queue_config_store.hpp"
#include "broker/workers/worker_registry.hpp"

namespace ojs::broker {

class EstimateService {
 public:
  EstimateService(JobReads& jobs, QueueDirectory& queues, EstimateStore reads, QueueConfigStore configs, PreemptionStore& marks,
                  Scheduler& scheduler, WorkerRegistry& workers, const BrokerConfig& config)
      : jobs_(jobs), queues_(queues), reads_(reads), configs_(configs), marks_(marks), scheduler_(scheduler), workers_(workers), config_(config) {}

  // The diagnosis's `estimate` of a job: {status: estimated | unresolvable | unknown |
  // started | not_waiting, ...} (docs/http-api.md). 404 when there is no such job.
  nlohmann::json for_job(const std::string& id);
  // POST /jobs/{id}/what-if: {changes: [...]} validated (400 naming the field), applied
  // to a copy of the snapshot; {what_if: {before, after, placed_now, worker_ids, helps, why_not?}}.
  // visible: whether the caller may name a job (an end_job change); one it may not is
  // answered exactly as one that does not run.
  nlohmann::json what_if(const std::string& id, const nlohmann::json& body,
                         const std::function<bool(const std::string& job_id)>& visible = {});
  // GET /queues/{name}/forecast: the next `limit` placements of the queue and when.
  nlohmann::json forecast(const std::string& queue, int limit);

  static constexpr int kMaxWaiting = 500;   // ready jobs one estimate reads ahead of its job
  static constexpr int kMaxForecast = 100;  // ?limit= at most

 private:
  struct Read {
    estimate::Snapshot snapshot;
    long long ahead_total = 0;  // ready jobs ahead of the target in the whole queue
    estimate::LateCalibration calibration;  // how the queue's jobs started against their late starts
    bool paused = false;
  };
  // The snapshot for `queue`: its first `limit` ready jobs; `target`, when it is not
  // among them (scheduled, a retry, or further back), joins after them.
  Read read(const std::string& queue, int limit, const JobRecord* target);
  struct MedianWanted;
  // The parts of read(): the waiting jobs in the queue's order; the live workers that
  // serve the queue and what runs on them (any queue); the capacity holds of
  // preemptions in progress; the learned medians where nothing better gives a run time.
  void read_waiting(const std::string& queue, const ClassSet& classes, int limit, const JobRecord* target,
                    const estimate::Overruns& overruns, estimate::Snapshot& s, MedianWanted& medians);
  void read_workers(const std::string& queue, const ClassSet& classes, const estimate::Overruns& overruns,
                    estimate::Snapshot& s, MedianWanted& medians);
  void read_holds(const std::string& queue, estimate::Snapshot& s);
  void read_medians(const std::string& queue, const MedianWanted& medians, estimate::Snapshot& s);
  // The estimate of a waiting job; for a what-if its snapshot, the estimate and how
  // many jobs ahead the run itself saw (`out`, `result`, `run_ahead`, each may be null).
  nlohmann::json estimate_of(const JobRecord& job, Read* out, estimate::Estimate* result, int* run_ahead);

  JobReads& jobs_;
  QueueDirectory& queues_;
  EstimateStore reads_;
  QueueConfigStore configs_;
  PreemptionStore& marks_;  // capacity holds in force (read only)
  Scheduler& scheduler_;
  WorkerRegistry& workers_;
  const BrokerConfig& config_;
};

}  // namespace ojs::broker
