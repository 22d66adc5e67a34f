// Discrete-event replay of a trace on a simulated cluster (simulated time: no
// sleeping). Eligibility, device choice and soft scores come from the real
// matching code (ojs::ml: fits_static, judge_dynamic, score, locality_hold,
// assign_devices through judge_dynamic). Under our policy the job a worker gets is
// chosen by the broker itself: jobs are pushed to and claimed from a real
// redis-server through the broker's JobStore and claim.lua (BrokerQueue), so queue
// policies, fair share and budgets are the broker's code, not a copy.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "broker/store/priority_score.hpp"
#include "common/stats.hpp"
#include "simulator/trace.hpp"

namespace ojs::bench {

enum class Policy {
  ours,           // pull per worker: best (band, -score, FIFO) among eligible classes, delay scheduling, preemption
  fifo_first_fit  // global FIFO, each job on the first worker that fits; no classes order, locality or preemption
};

struct SimOptions {
  Policy policy = Policy::ours;
  double locality_delay_s = 120;  // delay scheduling bound (ours)
  int models_per_worker = 3;      // loaded models kept per worker (LRU)
  bool preemption = true;         // the broker's capacity preemption: a waiting job of a higher class that fits no worker preempts (ours)
  broker::QueuePolicy queue_policy = broker::QueuePolicy::priority;  // the queue's policy (ours)
  std::map<std::string, double> tenant_weights;                      // fair share weights (ours)
  std::optional<double> half_life_seconds;  // tenant_fairness.half_life_seconds (ours; unset: the broker's default, 1 h)
  broker::FairOrder fair_order = broker::FairOrder::tenant;  // tenant_fairness.order (ours)
  std::string redis_binary = "redis-server";
  double tenant_window_start_s = 3600, tenant_window_s = 3600;       // GPU-time per tenant measured here
  // (ours) EASY backfill as the broker's queue config `backfill` does it: the
  // rules of broker/preemption/backfill.hpp and claim.lua's per-job test.
  bool backfill = false;
  double backfill_after_s = 60;     // backfill.after_s
  double backfill_max_start_s = 86400;  // backfill.max_start_s
  double backfill_hold_s = 10;      // --capacity-hold-ms: a reservation outlives its start this long
  // (ours) at each arrival, the broker's start estimate (broker/estimate/forecast.hpp)
  // over the simulated state; at the job's first start, its error.
  bool estimates = false;
  bool estimate_preemption = true;  // the estimate's run preempts (estimate::Snapshot::preemption)
  // Diagnosis only (docs/benchmarks.md#start-estimates): what the estimate is told that no broker
  // knows, to measure what each unknown costs. ends: running jobs' true ends; durations: also
  // the waiting jobs' true run times; arrivals: also the trace's later arrivals (next 55 h).
  enum class Oracle { none, ends, durations, arrivals } estimate_oracle = Oracle::none;
  // Running jobs report progress (the OJS progress extension) every this many simulated
  // seconds since their (re)start, which the estimate reads (estimate::progress_end); 0: never.
  double progress_every_s = 0;
  // What the reports count: the attempt's work (false), or the whole job's (true: a job
  // resumed from a checkpoint reports from where it resumed, as a training loop's step
  // count does).
  bool progress_of_job = false;
  std::string estimate_log;  // a CSV line per job at its first start: estimate against start
  // Test only: FETCH is not told what running jobs declared of CPU cores, host memory
  // and TPU chips (the broker's free_* predicates see them idle), so placements
  // oversubscribe them and the capacity check must say so.
  bool hide_host_load = false;
};

// How the start estimates made at arrival compare with the starts.
struct EstimateAccuracy {
  long long made = 0;          // arrivals with an estimate (status estimated)
  long long unknown = 0;       // arrivals whose estimate could not be made (unknown, unresolvable)
  long long measured = 0;      // estimated jobs that waited >= 60 s before their first start
  Percentiles abs_error_s;     // |estimated start - start| of those
  Percentiles rel_error;       // the same / their wait
  Percentiles signed_error_s;  // estimated - actual start (> 0: the job started before its estimate)
  std::vector<double> rel_buckets;  // share of `measured` within 10%, 20%, 50%, 100% of the wait, and beyond
  double early = 0;            // share of `measured` that started before their estimate
  double by_late = 0;          // share of `measured` that started by their start_at_p90 (the late start)
  double by_late_all = 0;      // the same of every estimated job that started
  double by_late_told = 0;     // the same of those told a start_at_p90 at least 60 s away
  Percentiles late_width_s;    // start_at_p90 - start_at of those
};

// One worker type (GPU pool) while jobs arrive.
struct PoolResult {
  int gpus = 0;
  double offered_fit = 0;    // GPU-seconds of jobs that fit the pool / (its GPUs x arrival span): demand it could get
  double offered_share = 0;  // the same with each job's work split over the pools it fits, by their GPUs
  double utilization = 0;    // GPU-seconds allocated in the arrival window / (its GPUs x arrival span)
  double stranded = 0;       // idle while a job that fits it waits, same denominator
};

struct SimResult {
  std::string policy;
  int jobs = 0, finished = 0, unfinished = 0;
  double makespan_s = 0;
  double gpu_utilization = 0;     // GPU-seconds allocated / (GPUs x makespan)
  double useful_utilization = 0;  // excluding model loading and work lost to preemption
  double offered_load = 0;        // GPU-seconds of work / (GPUs x arrival span): > 1 saturates
  double arrival_utilization = 0; // GPU-seconds allocated before the last arrival / (GPUs x arrival span)
  double stranded_gpu_hours = 0;  // arrival window: GPUs idle on a worker while a job its type can run waits
  double arrival_stranded = 0;    // the same as a fraction of GPUs x arrival span
  std::map<std::string, double> tenant_gpu_hours;  // allocated in the tenant window
  // Of those, what jobs got that started while no other tenant had a job
  // waiting that fits the worker type: any work-conserving order starts them.
  std::map<std::string, double> tenant_uncontested_gpu_hours;
  std::map<std::string, Percentiles> wait_s;  // per priority class: total time queued
  Percentiles wait_8gpu_s;                    // jobs of 8 GPUs (the ones backfill reserves for)
  std::map<std::string, PoolResult> pools;    // per worker type
  long long backfill_reservations = 0;
  long long locality_jobs = 0, locality_hits = 0;  // starts of jobs preferring a model; on a warm worker
  long long model_loads = 0;
  long long preemptions = 0;
  double lost_gpu_hours = 0;
  long long oversubscriptions = 0;       // capacity checks failed after a placement (must be 0)
  std::map<std::string, long long> oversubscribed = {  // the same by resource
      {"gpus", 0}, {"devices", 0}, {"cpu_cores", 0}, {"host_memory", 0}, {"tpu_chips", 0}};
  long long constraint_violations = 0;   // placements fits_static refuses (must be 0)
  long long judgements = 0;              // ours: class verdicts (each FETCH, each waiting class), controller sites; FIFO: dynamic
  EstimateAccuracy estimate;             // with SimOptions::estimates
  double wall_s = 0;
  double locality_hit_rate() const { return locality_jobs ? static_cast<double>(locality_hits) / locality_jobs : 0; }
};

SimResult simulate(const std::vector<SimJob>& trace, const std::vector<WorkerSpec>& workers, const SimOptions& options);

}  // namespace ojs::bench
