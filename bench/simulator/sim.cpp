#include "simulator/sim.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <limits>
#include <memory>
#include <optional>
#include <queue>
#include <set>
#include <stdexcept>
#include <cstdio>
#include <tuple>

#include <nlohmann/json.hpp>

#include "broker/estimate/forecast.hpp"
#include "broker/governance/queue_config.hpp"
#include "broker/preemption/backfill.hpp"
#include "broker/preemption/capacity_plan.hpp"
#include "broker/scheduling/capacity_guard_filter.hpp"
#include "broker/scheduling/locality_hold_filter.hpp"
#include "broker/scheduling/scheduler.hpp"
#include "simulator/broker_queue.hpp"
#include "ojs/ml/capabilities.hpp"
#include "ojs/ml/predicates.hpp"
#include "ojs/ml/requirement_class.hpp"
#include "ojs/ml/scoring.hpp"

namespace ojs::bench {

namespace {


enum class EventType { arrival, finish, grace_end, wake };

struct Event {
  double t;
  long long seq;  // ties broken by insertion order: deterministic
  EventType type;
  int job;
  int worker;
  int epoch;
  bool operator>(const Event& o) const { return std::tie(t, seq) > std::tie(o.t, o.seq); }
};

struct Running {
  double start = 0;
  double declared_end = 0;  // start + the job's ext_ml_estimated_duration_seconds (what backfill plans with)
  double work_start = 0;  // after model loading
  int gpus = 0;
  std::vector<int> devices;
  ml::ActiveJob active;  // what it holds, as the broker reads a held job (ml::active_job_from)
  ml::JobDemand demand;  // what it declared it holds (ml::job_demand): what the capacity check counts
  bool preempting = false;
  double preempt_end = 0;  // preempting: its grace period's end
  bool uncontested = false;  // no other tenant had a job waiting for this worker type
};

struct WorkerState {
  const WorkerSpec* spec = nullptr;
  int type = 0;                  // index of spec->type, for the static memo
  ml::Capabilities caps;         // models_loaded changes as models are loaded
  std::string fingerprint;       // of caps (ml::fingerprint): the key of the Scheduler's static memo
  ml::WorkerLoad load;           // built from what runs, as the broker's registry builds it (reload)
  std::map<int, Running> running;  // job -> run
  std::deque<std::string> lru;     // loaded models, least recently used first

  int gpus_free() const { return caps.gpu.count - load.gpus_in_use(); }
  // The reservation held on this worker (job -1: none).
  struct {
    int job = -1, cls = -1, gpus = 0;
    double start = 0, until = 0;
  } reservation;
  int cores_free() const { return caps.cpu_cores.value_or(1 << 20) - load.cpu_cores_in_use(); }
  // A capacity hold (preemption) on this worker (job -1: none): the victims' GPUs are kept for class `cls`.
  struct {
    int job = -1, cls = -1;
    std::vector<broker::RunningJob> victims;
    double until = 0;
  } hold;
};

struct JobState {
  double remaining = 0;
  double queued_since = 0;
  double waited = 0;
  double rank = 0;
  long long seq = 0;
  int cls = 0;
  int epoch = 0;
  int worker = -1;
  bool done = false;
  bool preemption_pending = false;
  int reserved_on = -1;  // worker holding a reservation for it
  std::optional<double> estimated_start;  // made at arrival (simulated seconds)
  std::optional<double> late_start;       // its start_at_p90
  std::optional<double> raw_late_start;   // the run's, before the calibration widened it
  std::optional<double> started_vs_late;  // (first start - arrival) / (the run's late start - arrival): the calibration
  std::string estimated_worker;           // where (the first of a gang's), for --estimate-log
  bool started = false;                   // the error is measured at the first start
};

class Simulation {
 public:
  Simulation(const std::vector<SimJob>& trace, const std::vector<WorkerSpec>& workers, const SimOptions& options)
      : trace_(trace), options_(options), jobs_(trace.size()), scheduler_(scheduler_options(options, now_)) {
    std::map<std::string, int> types;
    for (const auto& spec : workers) {
      WorkerState w;
      w.spec = &spec;
      w.type = types.emplace(spec.type, static_cast<int>(types.size())).first->second;
      w.caps = spec.caps;
      w.fingerprint = ml::fingerprint(w.caps);
      for (const auto& m : w.caps.models_loaded) w.lru.push_back(m.model_id);
      workers_.push_back(std::move(w));
      total_gpus_ += spec.caps.gpu.count;
      pool_gpus_[spec.type] += spec.caps.gpu.count;
    }
    type_names_.resize(types.size());
    for (const auto& [name, index] : types) type_names_[static_cast<std::size_t>(index)] = name;
    for (std::size_t i = 0; i < trace.size(); ++i) {
      const auto& j = trace[i];
      auto [it, added] = class_of_.emplace(j.class_id, static_cast<int>(classes_.size()));
      if (added) classes_.push_back({&j.req, j.class_id, ml::requirement_class(j.req).canonical, {}, {}});
      jobs_[i].cls = it->second;
      jobs_[i].remaining = j.work_s;
      jobs_[i].seq = static_cast<long long>(i);
      jobs_[i].rank = broker::rank_base(broker::priority_class_rank(j.req), j.priority);
      push({j.arrival_s, 0, EventType::arrival, static_cast<int>(i), -1, 0});
    }
    for (const auto& j : trace) {
      offered_gpu_s_ += j.work_s * j.req.gpu_count();
      last_arrival_ = std::max(last_arrival_, j.arrival_s);
    }
    if (options.policy == Policy::ours) {
      BrokerQueueOptions q;
      q.policy = options.queue_policy;
      q.tenant_weights = options.tenant_weights;
      q.redis_binary = options.redis_binary;
      q.half_life_seconds = options.half_life_seconds;
      q.fair_order = options.fair_order;
      queue_ = std::make_unique<BrokerQueue>(q);
    }
    for (std::size_t c = 0; c < classes_.size(); ++c) classes_by_id_.push_back(static_cast<int>(c));
    std::sort(classes_by_id_.begin(), classes_by_id_.end(),  // the controller's order (the queue's class map)
              [&](int a, int b) { return classes_[static_cast<std::size_t>(a)].id < classes_[static_cast<std::size_t>(b)].id; });
    static_memo_.assign(classes_.size() * types.size(), -1);
    types_ = static_cast<int>(types.size());
    scoring_.locality_delay_ms = static_cast<std::int64_t>(options.locality_delay_s * 1000);
    scoring_.explain = false;  // the start estimate's scoring (est::Snapshot::scoring)
    if (options.estimates && !options.estimate_log.empty()) {
      estimate_log_.reset(std::fopen((options.estimate_log + (options.backfill ? ".bf" : "")).c_str(), "w"));
      if (!estimate_log_) throw std::runtime_error("cannot write --estimate-log " + options.estimate_log);
      std::fprintf(estimate_log_.get(), "job,kind,class_rank,gpus,arrival_s,start_s,estimated_start_s,worker,estimated_worker,start_at_p90_s\n");
    }
  }

  SimResult run() {
    const auto wall_start = std::chrono::steady_clock::now();
    while (!events_.empty()) {
      const Event e = events_.top();
      events_.pop();
      count_stranded(e.t);
      now_ = e.t;
      if (queue_) queue_->advance(now_);  // Redis TIME is the simulated time
      handle(e);
      // Everything due at the same instant first, then one dispatch.
      if (!events_.empty() && events_.top().t <= now_) continue;
      dispatch();
    }
    result_.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    return finish();
  }

 private:
  struct ClassInfo {
    const ml::Requirements* req;
    std::string id;
    std::string canonical;  // the class's canonical JSON, as the queue's class map holds it
    std::set<std::tuple<double, long long, int>> pending;  // (rank, seq, job): the broker's ready zset
    std::set<std::pair<double, int>> by_age;  // (queued_since, job) of the pending: who outwaits a locality hold next
    double wake_at = -1;  // the locality wake scheduled for the class (-1: none)
  };

  // The broker's Scheduler as FETCH runs it (app.cpp builds it from --locality-delay-ms
  // and --placement, pack here), on the simulated clock: the locality hold's cutoff is
  // compared by claim.lua with enqueued_at, which the simulator's redis-server stamps
  // with simulated time (BrokerQueue::redis_ms).
  static broker::SchedulerOptions scheduler_options(const SimOptions& options, const double& now) {
    broker::SchedulerOptions o;
    o.locality_delay_ms = static_cast<std::int64_t>(options.locality_delay_s * 1000);
    o.clock = [&now] { return BrokerQueue::redis_ms(now); };
    return o;
  }

  const std::vector<SimJob>& trace_;
  SimOptions options_;
  std::vector<JobState> jobs_;
  std::vector<WorkerState> workers_;
  std::vector<ClassInfo> classes_;
  std::vector<int> classes_by_id_;  // class indexes in class id order
  std::map<std::string, int> class_of_;  // class id -> index
  broker::ClassSet waiting_;            // the classes with a waiting job: what a FETCH judges
  long long next_seq_ = 0;          // the queue's sequence (arrivals and requeues)
  std::vector<signed char> static_memo_;  // class x worker type: -1 unknown, 0 refused, 1 fits
  int types_ = 0;
  int total_gpus_ = 0;
  ml::ScoringOptions scoring_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  long long event_seq_ = 0;
  double now_ = 0;
  broker::Scheduler scheduler_;  // its clock reads now_ (scheduler_options)
  double allocated_gpu_s_ = 0, useful_gpu_s_ = 0;
  std::size_t rotation_ = 0;
  SimResult result_;
  std::unique_ptr<BrokerQueue> queue_;  // ours: the broker's queue (real redis-server, claim.lua)
  double offered_gpu_s_ = 0, last_arrival_ = 0, arrival_allocated_gpu_s_ = 0, stranded_gpu_s_ = 0;
  std::map<std::string, int> pool_gpus_;
  std::vector<std::string> type_names_;  // worker type index -> name
  std::map<std::string, double> pool_allocated_s_, pool_stranded_s_;  // arrival window, GPU-seconds
  std::map<std::pair<std::size_t, int>, bool> uncontested_fit_;  // (class, worker type) -> fits statically
  struct EstimateError {
    double error;  // estimated - actual start
    double wait;
    std::optional<double> late_margin;  // start_at_p90 - actual start
    std::optional<double> width;        // start_at_p90 - start_at
    double told_wait = 0;               // start_at_p90 - arrival
  };
  std::vector<EstimateError> estimate_errors_;  // per started job with an estimate
  std::deque<double> ran_vs_declared_;  // ran / declared of the last completed jobs (Snapshot overruns)
  std::deque<double> started_vs_late_;  // how late they started against their late start (LateCalibration)
  std::unique_ptr<FILE, int (*)(FILE*)> estimate_log_{nullptr, &std::fclose};  // --estimate-log

  void push(Event e) {
    e.seq = event_seq_++;
    events_.push(e);
  }

  const SimJob& job(int j) const { return trace_[static_cast<std::size_t>(j)]; }

  void enqueue(int j) {
    auto& s = jobs_[static_cast<std::size_t>(j)];
    s.queued_since = now_;
    s.worker = -1;
    // The queue's sequence, as PUSH and a requeue (make_available) take it: a preempted
    // job goes behind the jobs of its band that wait, as it does in the broker's ready set.
    s.seq = next_seq_++;
    auto& cls = classes_[static_cast<std::size_t>(s.cls)];
    if (cls.pending.empty()) waiting_.classes.emplace(cls.id, cls.canonical);
    cls.pending.emplace(s.rank, s.seq, j);
    cls.by_age.emplace(s.queued_since, j);
  }

  void handle(const Event& e) {
    auto& s = jobs_[static_cast<std::size_t>(e.job)];
    switch (e.type) {
      case EventType::arrival:
        enqueue(e.job);
        if (queue_) queue_->push(e.job, job(e.job));
        if (options_.estimates) estimate_at_arrival(e.job);
        break;
      case EventType::wake: break;  // the workers fetch again (below)
      case EventType::finish:
        if (s.epoch != e.epoch || s.worker < 0) break;  // preempted meanwhile
        stop(e.job, /*completed=*/true);
        break;
      case EventType::grace_end:
        if (s.epoch != e.epoch || s.worker < 0) break;  // finished within its grace period
        stop(e.job, /*completed=*/false);
        break;
    }
  }

  // ----- matching, through the real code -----

  // Whether j, starting on w (already out of its class's waiting set, its
  // GPUs not yet taken), was the only tenant's work waiting that fits w's type and
  // its free GPUs: then any work-conserving order starts its tenant's job there,
  // whatever the weights. [fairband] Under the class order work of a lower priority
  // class does not contest: it takes the class first ([fairorder] the tenant order
  // weighs every class: docs/matching.md#fair-share). A
  // lower bound of what is forced (a job that fits the free GPUs by count may still
  // not fit their topology). Its own memo of the static fit, so the judgements
  // counted stay the policy's.
  bool uncontested(int j, const WorkerState& w) {
    const std::string& tenant = job(j).tenant;
    if (tenant.empty() || options_.tenant_weights.size() < 2) return false;
    const int rank = broker::priority_class_rank(job(j).req);
    const bool by_class = options_.fair_order == broker::FairOrder::priority_class;
    const int free = w.gpus_free();
    for (std::size_t c = 0; c < classes_.size(); ++c) {
      const auto& cls = classes_[c];
      if (cls.pending.empty() || cls.req->gpu_count() == 0 || cls.req->gpu_count() > free) continue;
      auto memo = uncontested_fit_.find({c, w.type});
      if (memo == uncontested_fit_.end())
        memo = uncontested_fit_.emplace(std::make_pair(c, w.type), ml::fits_static(*cls.req, &w.caps)).first;
      if (!memo->second) continue;
      for (const auto& p : cls.pending) {
        const auto& other = job(std::get<2>(p));
        if (other.tenant != tenant && (!by_class || broker::priority_class_rank(other.req) >= rank)) return false;
      }
    }
    return true;
  }

  bool fits_static(int cls, const WorkerState& w) {
    auto& memo = static_memo_[static_cast<std::size_t>(cls * types_ + w.type)];
    if (memo < 0) {
      ++result_.judgements;
      memo = ml::fits_static(*classes_[static_cast<std::size_t>(cls)].req, &w.caps) ? 1 : 0;
    }
    return memo == 1;
  }

  // -----

  // The broker's start estimate for job j, just arrived, over the simulated state: the
  // workers with what runs on them (ending at their declared ends), the waiting jobs in
  // the queue's order (the first kMaxWaiting, as the broker reads them; j joins after
  // them when further back) with their declared durations.
  static constexpr std::size_t kMaxWaiting = 500;
  void estimate_at_arrival(int j) {
    namespace est = broker::estimate;
    est::Snapshot snap;
    const auto ms = [](double s) { return static_cast<std::int64_t>(std::llround(s * 1000)); };
    snap.now_ms = ms(now_);
    snap.scoring = scoring_;
    snap.capacity_hold_ms = ms(options_.backfill_hold_s);
    snap.preemption = options_.estimate_preemption;
    const auto overruns = est::Overruns::of({ran_vs_declared_.begin(), ran_vs_declared_.end()});
    const auto oracle = options_.estimate_oracle;
    for (const auto& w : workers_) {
      est::Worker ew{w.spec->id, w.caps, {}, {}};
      for (auto& rj : running_view(w)) {
        const int id = std::stoi(rj.job_id);
        const Running& r = w.running.at(id);
        est::Running er;
        er.job = std::move(rj);
        if (const auto declared = job(id).req.scheduling.estimated_duration_seconds) {
          er.job.declared_end_ms = overruns.end(ms(r.start), *declared * 1000LL, snap.now_ms);
          er.late_end_ms = overruns.end(ms(r.start), *declared * 1000LL, snap.now_ms, est::kLateQuantile);
          if (oracle != SimOptions::Oracle::none)  // diagnosis: its true end
            er.late_end_ms = er.job.declared_end_ms = ms(r.work_start + jobs_[static_cast<std::size_t>(id)].remaining);
          er.source = est::EndSource::declared;
        }
        if (options_.progress_every_s > 0 && oracle == SimOptions::Oracle::none) {
          // It reports its true share of this attempt's work done (linear in time, nothing
          // during model loading) at each multiple of --progress-every-s since its (re)start;
          // read as the service reads the job hash's progress and progress_updated_at, and
          // its first report above 0 as progress.lua keeps it (progress_base, _at).
          const double every = options_.progress_every_s;
          const double at = r.start + std::floor((now_ - r.start) / every) * every;
          const double work = jobs_[static_cast<std::size_t>(id)].remaining;
          const double total = options_.progress_of_job ? job(id).work_s : work;  // --progress-of
          const auto done = [&](double t) {
            return total > 0 ? std::clamp((total - work + t - r.work_start) / total, 0.0, 1.0) : 0.0;
          };
          est::Progress reported{done(at), ms(at)};
          reported.resumed = total > work;  // it saved work before a preemption (a checkpoint)
          const double first = r.start + (std::floor((r.work_start - r.start) / every) + 1) * every;
          if (first <= at) {
            reported.base_fraction = done(first);
            reported.base_ms = ms(first);
          }
          if (const auto end = est::progress_end(ms(r.start), reported, snap.now_ms)) {
            er.job.declared_end_ms = *end;
            er.late_end_ms.reset();
            er.source = est::EndSource::progress;
          }
        }
        if (r.preempting && (!er.job.declared_end_ms || *er.job.declared_end_ms > ms(r.preempt_end))) {
          er.job.declared_end_ms = std::max(ms(r.preempt_end), snap.now_ms);  // as the service reads preempt_deadline
          er.late_end_ms.reset();
          er.source = est::EndSource::preempted;
        }
        ew.running.push_back(std::move(er));
      }
      if (w.hold.job >= 0)
        snap.holds.push_back({w.spec->id, std::to_string(w.hold.job), classes_[static_cast<std::size_t>(w.hold.cls)].id, ms(w.hold.until), {}});
      if (w.reservation.job >= 0)  // the controller preempts nothing on a reserved worker
        snap.holds.push_back({w.spec->id, std::to_string(w.reservation.job), "", ms(w.reservation.until), {}, true});
      snap.workers.push_back(std::move(ew));
    }
    std::vector<std::tuple<double, long long, int>> order;
    for (const auto& c : classes_)
      for (const auto& p : c.pending) order.push_back(p);
    std::sort(order.begin(), order.end());
    const auto& mine = jobs_[static_cast<std::size_t>(j)];
    const std::tuple<double, long long, int> me{mine.rank, mine.seq, j};
    if (order.size() > kMaxWaiting) {
      const bool within = std::find(order.begin(), order.begin() + kMaxWaiting, me) != order.begin() + kMaxWaiting;
      order.resize(kMaxWaiting);
      if (!within) order.push_back(me);
      snap.truncated = true;
    }
    for (const auto& [rank, seq, id] : order) {
      const auto& sj = job(id);
      est::Waiting w;
      w.id = std::to_string(id);
      w.class_id = sj.class_id;
      w.req = &sj.req;
      w.score = rank + static_cast<double>(seq);
      w.enqueued_ms = ms(jobs_[static_cast<std::size_t>(id)].queued_since);
      w.class_rank = broker::priority_class_rank(sj.req);
      if (sj.req.scheduling.estimated_duration_seconds) {
        w.run_ms = overruns.run(*sj.req.scheduling.estimated_duration_seconds * 1000LL);
        w.late_run_ms = overruns.run(*sj.req.scheduling.estimated_duration_seconds * 1000LL, est::kLateQuantile);
        w.run_source = est::EndSource::declared;
      }
      if (oracle >= SimOptions::Oracle::durations) w.late_run_ms = w.run_ms = ms(jobs_[static_cast<std::size_t>(id)].remaining);
      snap.waiting.push_back(std::move(w));
    }
    if (oracle == SimOptions::Oracle::arrivals) {  // diagnosis: the trace's next arrivals, due when they arrive
      constexpr double kAhead = 200000;  // s (55 h)
      for (auto k = static_cast<std::size_t>(j) + 1; k < trace_.size() && trace_[k].arrival_s <= now_ + kAhead; ++k) {
        const auto& sj = trace_[k];
        est::Waiting w;
        w.id = std::to_string(k);
        w.class_id = sj.class_id;
        w.req = &sj.req;
        w.score = jobs_[k].rank + static_cast<double>(next_seq_ + static_cast<long long>(k) - j);
        w.enqueued_ms = w.due_ms = ms(sj.arrival_s);
        w.class_rank = broker::priority_class_rank(sj.req);
        w.run_ms = ms(sj.work_s);
        w.run_source = est::EndSource::declared;
        snap.waiting.push_back(std::move(w));
      }
    }
    const auto e = est::estimate_range(snap, std::to_string(j));
    if (e.status == est::Estimate::Status::estimated) {
      jobs_[static_cast<std::size_t>(j)].estimated_start = static_cast<double>(e.start_ms) / 1000.0;
      if (e.late_start_ms) {
        const auto calibration = est::LateCalibration::of({started_vs_late_.begin(), started_vs_late_.end()});
        jobs_[static_cast<std::size_t>(j)].raw_late_start = static_cast<double>(*e.late_start_ms) / 1000.0;
        jobs_[static_cast<std::size_t>(j)].late_start = static_cast<double>(calibration.widen(snap.now_ms, *e.late_start_ms)) / 1000.0;
      }
      if (!e.worker_ids.empty()) jobs_[static_cast<std::size_t>(j)].estimated_worker = e.worker_ids.front();
      ++result_.estimate.made;
    } else {
      ++result_.estimate.unknown;
    }
  }

  void estimate_accuracy() {
    auto& a = result_.estimate;
    std::vector<double> abs_error, rel_error, signed_error;
    const std::vector<double> bounds = {0.1, 0.2, 0.5, 1.0};
    a.rel_buckets.assign(bounds.size() + 1, 0);
    long long early = 0, by_late = 0, all = 0, all_by_late = 0, told = 0, told_by_late = 0;
    std::vector<double> widths;
    for (const auto& [error, wait, late_margin, width, told_wait] : estimate_errors_) {
      const bool covered = late_margin && *late_margin >= -0.001;  // the estimate is in whole ms
      ++all, all_by_late += covered;
      if (told_wait >= 60) ++told, told_by_late += covered;
      if (wait < 60) continue;
      if (covered) ++by_late;
      if (width) widths.push_back(*width);
      abs_error.push_back(std::abs(error));
      rel_error.push_back(std::abs(error) / wait);
      signed_error.push_back(error);
      if (error > 0) ++early;
      const auto bucket = std::find_if(bounds.begin(), bounds.end(), [&](double b) { return std::abs(error) / wait <= b; });
      a.rel_buckets[static_cast<std::size_t>(bucket - bounds.begin())] += 1;
    }
    a.measured = static_cast<long long>(abs_error.size());
    for (auto& b : a.rel_buckets) b = a.measured ? b / static_cast<double>(a.measured) : 0;
    a.early = a.measured ? static_cast<double>(early) / static_cast<double>(a.measured) : 0;
    a.by_late = a.measured ? static_cast<double>(by_late) / static_cast<double>(a.measured) : 0;
    a.by_late_all = all ? static_cast<double>(all_by_late) / static_cast<double>(all) : 0;
    a.by_late_told = told ? static_cast<double>(told_by_late) / static_cast<double>(told) : 0;
    a.late_width_s = percentiles(widths);
    a.abs_error_s = percentiles(abs_error);
    a.rel_error = percentiles(rel_error);
    a.signed_error_s = percentiles(signed_error);
  }

  // ----- dispatch -----

  void dispatch() {
    if (options_.policy == Policy::ours) {
      if (options_.backfill) plan_backfill();
      // Every worker polls (in rotating order) and takes jobs until none is eligible.
      for (std::size_t k = 0; k < workers_.size(); ++k) {
        const auto wi = (rotation_ + k) % workers_.size();
        while (fetch(static_cast<int>(wi))) {
        }
      }
      ++rotation_;
      if (options_.preemption) preempt_waiting();
    } else {
      first_fit_fifo();
    }
  }

  // One FETCH by worker wi: the broker's claim (fetch_from_broker). Skipped where the
  // broker could only refuse every class: a full worker, or one no waiting class fits
  // statically (a TPU host while only GPU work waits; fits_static is the broker's
  // static verdict, memoised per worker type).
  bool fetch(int wi) {
    auto& w = workers_[static_cast<std::size_t>(wi)];
    if (w.gpus_free() <= 0 && w.cores_free() <= 0) return false;
    if (!any_waiting_class_fits(w)) return false;
    return fetch_from_broker(wi);
  }

  bool any_waiting_class_fits(const WorkerState& w) {
    for (std::size_t c = 0; c < classes_.size(); ++c)
      if (!classes_[c].pending.empty() && fits_static(static_cast<int>(c), w)) return true;
    return false;
  }

  // One FETCH by worker wi, as the broker's FetchService runs it: the class verdicts
  // of broker::Scheduler::judge (the ML predicates, static then dynamic, the locality
  // hold, the scores) over the classes with a waiting job, then the capacity guards
  // (broker::apply_capacity_guards: capacity hold, [backfill] reservation), then the
  // broker's claim (broker::Claimer: the C++ decision, then claim.lua), which picks
  // the job by the queue's policy. Nothing here decides what a worker may take.
  bool fetch_from_broker(int wi) {
    auto& w = workers_[static_cast<std::size_t>(wi)];
    broker::WorkerView view{w.spec->id, w.caps, w.fingerprint, w.load, {}};
    auto verdicts = scheduler_.judge(waiting_, view);
    result_.judgements += static_cast<long long>(verdicts.size());
    broker::apply_capacity_guards(guards_of(w), scheduler_, BrokerQueue::kQueue, waiting_, view, verdicts, {});  // pack, as judge
    std::vector<broker::EligibleClass> eligible;
    std::map<std::string, std::vector<int>> devices_of;
    for (auto& v : verdicts) {
      if (!v.judgement.eligible()) continue;
      wake_for_locality(v);
      eligible.push_back(std::move(v.claim));
      devices_of[v.class_id] = std::move(v.judgement.devices);
    }
    if (eligible.empty()) return false;
    const int j = queue_->claim(w.spec->id, eligible);
    if (j < 0) return false;
    place(j, wi, std::move(devices_of.at(job(j).class_id)));
    return true;
  }

  // An eligible class whose verdict holds its young jobs for a better-suited worker
  // (a refusal of code `held` in Judgement::holds: the locality hold; claim.lua skips
  // the jobs enqueued after the cutoff): its oldest held job is claimable here once it
  // has waited the delay, so the simulation wakes then (a worker polls again; in the
  // broker it would on its next FETCH). The oldest held job, not the class's head: under
  // `fair` the claim may want any tenant's job of the class, and each becomes takeable
  // at its own time (a wake for the head only left the others to the next event).
  void wake_for_locality(const broker::ClassVerdict& v) {
    const auto now_ms = BrokerQueue::redis_ms(now_);
    auto& cls = classes_[static_cast<std::size_t>(class_of_.at(v.class_id))];
    for (const auto& hold : v.judgement.holds) {
      if (hold.code != ml::VerdictCode::held) continue;
      // Those enqueued within the delay, found by age (a backlog's old jobs are not walked).
      const auto young = cls.by_age.lower_bound({now_ - options_.locality_delay_s - 1, std::numeric_limits<int>::min()});
      for (auto it = young; it != cls.by_age.end(); ++it) {
        const auto [since, j] = *it;
        if (!broker::hold_applies(hold, BrokerQueue::redis_ms(since), now_ms)) continue;  // old enough already
        const double at = since + options_.locality_delay_s + 0.001;
        if (cls.wake_at > now_ && cls.wake_at <= at) return;  // a wake as early is on its way
        cls.wake_at = at;
        push({at, 0, EventType::wake, j, -1, 0});
        return;
      }
      return;
    }
  }

  // The capacity guards' marks for worker w, as FETCH has them after
  // read_capacity_guards (scheduling/capacity_guard_filter.cpp), built from the
  // simulator's memory rather than read from Redis: the controller's passes here
  // (preempt_waiting, plan_backfill) keep their holds in WorkerState, not as the hold
  // marks in Redis that the broker's passes write, so the hold is built field by field
  // as capacity_preemption.cpp and backfill_reservations.cpp fill it, and the guards
  // themselves (apply_capacity_guards over CapacityGuards) are the broker's code. As
  // read_capacity_guards voids it, a hold counts only until it lapses and while its job
  // still waits. One hold per worker, as in the broker: preempt_waiting skips reserved
  // workers and plan_backfill held ones. No admin reservations in the simulator.
  broker::CapacityGuards guards_of(const WorkerState& w) const {
    broker::CapacityGuards g;
    g.now_ms = BrokerQueue::redis_ms(now_);
    const auto waits = [&](int j) {
      const auto& s = jobs_[static_cast<std::size_t>(j)];
      return s.worker < 0 && !s.done;
    };
    const auto hold_for = [&](int j, int cls, double until) {  // what both kinds of hold name
      broker::CapacityHold h;
      h.worker_id = w.spec->id;
      h.for_job = std::to_string(j);
      h.queue = BrokerQueue::kQueue;
      h.class_id = classes_[static_cast<std::size_t>(cls)].id;
      h.class_rank = broker::priority_class_rank(job(j).req);
      h.until_ms = BrokerQueue::redis_ms(until);
      return h;
    };
    if (w.hold.job >= 0 && w.hold.until > now_ && waits(w.hold.job)) {  // capacity preemption's hold
      g.hold = hold_for(w.hold.job, w.hold.cls, w.hold.until);
      g.hold->victims = w.hold.victims;
      g.hold->gpus = job(w.hold.job).req.gpu_count();
    } else if (w.reservation.job >= 0 && w.reservation.until > now_ && waits(w.reservation.job)) {
      g.hold = hold_for(w.reservation.job, w.reservation.cls, w.reservation.until);
      g.hold->backfill_start_ms = BrokerQueue::redis_ms(w.reservation.start);
      g.hold->gpus = w.reservation.gpus;
    }
    return g;
  }

  // GPUs idle on a worker while a waiting GPU job could run on that worker type
  // (static fit): capacity the placement leaves stranded (too small a fragment,
  // no NVLink clique, held for locality), counted from the last event to `t`.
  void count_stranded(double t) {
    if (now_ >= last_arrival_ || t <= now_) return;
    int stranded = 0;  // the state since the last event, before the event at t changes it
    const double span = std::min(t, last_arrival_) - now_;  // the arrival window only
    for (auto& w : workers_) {
      const int free = w.gpus_free();
      pool_allocated_s_[w.spec->type] += (w.caps.gpu.count - free) * span;
      if (free <= 0) continue;
      for (std::size_t c = 0; c < classes_.size(); ++c)
        if (!classes_[c].pending.empty() && classes_[c].req->gpu_count() > 0 && fits_static(static_cast<int>(c), w)) {
          stranded += free;
          pool_stranded_s_[w.spec->type] += free * span;
          break;
        }
    }
    stranded_gpu_s_ += stranded * span;
  }

  // The baseline, not the broker: each waiting job in arrival order on the first
  // worker it fits, by the ML library's predicates alone (static, memoised per worker
  // type, then dynamic): no locality hold, scores, guards or preemption.
  void first_fit_fifo() {
    std::set<std::pair<long long, int>> fifo;  // arrival order, across classes
    for (const auto& cls : classes_)
      for (const auto& [rank, seq, j] : cls.pending) fifo.emplace(seq, j);
    std::vector<char> failed(classes_.size(), 0);  // a class that fit nowhere cannot fit after more placements
    for (const auto& [seq, j] : fifo) {
      const int c = jobs_[static_cast<std::size_t>(j)].cls;
      if (failed[static_cast<std::size_t>(c)]) continue;
      bool placed = false;
      for (std::size_t wi = 0; wi < workers_.size() && !placed; ++wi) {
        auto& w = workers_[wi];
        const auto& req = *classes_[static_cast<std::size_t>(c)].req;
        if (req.gpu_count() > w.gpus_free() || !fits_static(c, w)) continue;  // the GPU count first: cheap
        ++result_.judgements;
        auto judgement = ml::judge_dynamic(req, &w.caps, w.load);
        if (judgement.eligible()) {
          place(j, static_cast<int>(wi), std::move(judgement.devices));
          placed = true;
        }
      }
      if (!placed) failed[static_cast<std::size_t>(c)] = 1;
    }
  }

  // ----- running jobs -----

  void place(int j, int wi, std::vector<int> devices) {
    auto& s = jobs_[static_cast<std::size_t>(j)];
    auto& w = workers_[static_cast<std::size_t>(wi)];
    const auto& sj = job(j);
    auto& cls = classes_[static_cast<std::size_t>(s.cls)];
    cls.pending.erase({s.rank, s.seq, j});
    cls.by_age.erase({s.queued_since, j});
    if (cls.pending.empty()) waiting_.classes.erase(cls.id);
    s.waited += now_ - s.queued_since;
    if (!s.started) {
      s.started = true;
      const auto ms = [](double t) { return static_cast<std::int64_t>(std::llround(t * 1000)); };
      if (s.raw_late_start)
        s.started_vs_late = broker::estimate::started_vs_late(ms(job(j).arrival_s), ms(*s.raw_late_start), ms(now_));
      if (s.estimated_start) {
        std::optional<double> margin, width;
        if (s.late_start) margin = *s.late_start - now_, width = *s.late_start - *s.estimated_start;
        estimate_errors_.push_back({*s.estimated_start - now_, now_ - job(j).arrival_s, margin, width,
                                    s.late_start.value_or(job(j).arrival_s) - job(j).arrival_s});
      }
      if (estimate_log_)
        std::fprintf(estimate_log_.get(), "%d,%s,%d,%d,%.1f,%.1f,%.1f,%s,%s,%.1f\n", j, sj.kind.c_str(), broker::priority_class_rank(sj.req),
                     sj.req.gpu_count(), sj.arrival_s, now_, s.estimated_start.value_or(-1), w.spec->id.c_str(), s.estimated_worker.c_str(),
                     s.late_start.value_or(-1));
    }
    s.worker = wi;
    s.preemption_pending = false;
    ++s.epoch;

    Running r;
    r.start = now_;
    r.declared_end = now_ + sj.req.scheduling.estimated_duration_seconds.value_or(0);
    r.gpus = sj.req.gpu_count();
    r.uncontested = r.gpus > 0 && uncontested(j, w);
    if (s.reserved_on >= 0) {  // claimed: its reservation ends
      workers_[static_cast<std::size_t>(s.reserved_on)].reservation.job = -1;
      s.reserved_on = -1;
    }
    r.devices = std::move(devices);
    double load_s = 0;
    const std::string& model = sj.req.soft.locality_model_id;
    if (!model.empty()) {
      ++result_.locality_jobs;
      if (w.caps.has_model(model)) {
        ++result_.locality_hits;
        w.lru.erase(std::find(w.lru.begin(), w.lru.end(), model));
      } else {
        ++result_.model_loads;
        load_s = model_load_seconds(model);
        if (static_cast<int>(w.lru.size()) >= options_.models_per_worker) w.lru.pop_front();
      }
      w.lru.push_back(model);
      w.caps.models_loaded.clear();
      for (const auto& m : w.lru) w.caps.models_loaded.push_back({m, "", "safetensors"});
      w.fingerprint = ml::fingerprint(w.caps);
    }
    r.work_start = now_ + load_s;
    r.active = ml::active_job_from(sj.document, r.gpus);
    r.active.job_id = std::to_string(j);
    r.demand = ml::job_demand(sj.document);
    if (options_.hide_host_load) r.active.cpu_cores = 0, r.active.memory_gb = 0, r.active.tpu_chips = 0;
    w.running[j] = r;
    reload(w);
    push({r.work_start + s.remaining, 0, EventType::finish, j, wi, s.epoch});

    if (!fits_static(s.cls, w)) ++result_.constraint_violations;
    check_capacity(w);
  }

  // The worker's load as the broker reads it at a FETCH (WorkerStore's held jobs,
  // worker_store.cpp): each running job's demand, its devices held.
  static void reload(WorkerState& w) {
    w.load = {};
    for (const auto& [id, r] : w.running) {
      w.load.active.push_back(r.active);
      w.load.hold(r.devices, r.active.gpu_memory_gb);
    }
  }

  // Independent of the matcher: what runs on w never exceeds what w has. GPUs and
  // devices from the placements; CPU cores, host memory and TPU chips from what every
  // running job declared (ml::job_demand, the broker's one reading of it), whatever
  // its accelerator. A capacity w does not advertise is not bounded, as for the broker.
  void check_capacity(const WorkerState& w) {
    int gpus = 0, cores = 0, chips = 0;
    double memory_gb = 0;
    std::set<int> devices;
    std::size_t device_claims = 0;
    for (const auto& [j, r] : w.running) {
      gpus += r.gpus;
      cores += r.demand.cpu_cores;
      memory_gb += r.demand.memory_gb;
      chips += r.demand.tpu_chips;
      devices.insert(r.devices.begin(), r.devices.end());
      device_claims += r.devices.size();
      for (int d : r.devices) {
        const bool known = std::any_of(w.caps.devices.begin(), w.caps.devices.end(),
                                       [d](const ml::GpuDevice& g) { return g.index == d && g.healthy; });
        if (!known) oversubscribed("devices");
      }
      if (!w.caps.devices.empty() && static_cast<int>(r.devices.size()) != r.gpus) oversubscribed("devices");
    }
    if (gpus > w.caps.gpu.count) oversubscribed("gpus");
    if (devices.size() != device_claims) oversubscribed("devices");  // a device given twice
    if (w.caps.cpu_cores && cores > *w.caps.cpu_cores) oversubscribed("cpu_cores");
    if (w.caps.memory_gb && memory_gb > *w.caps.memory_gb + 1e-9) oversubscribed("host_memory");
    if (chips > w.caps.tpu.chip_count) oversubscribed("tpu_chips");
  }

  void oversubscribed(const char* resource) {
    ++result_.oversubscriptions;
    ++result_.oversubscribed[resource];
  }

  void stop(int j, bool completed) {
    auto& s = jobs_[static_cast<std::size_t>(j)];
    auto& w = workers_[static_cast<std::size_t>(s.worker)];
    const Running r = w.running.at(j);
    const auto& sj = job(j);
    const double progress = std::max(0.0, now_ - r.work_start);
    allocated_gpu_s_ += r.gpus * (now_ - r.start);
    arrival_allocated_gpu_s_ += r.gpus * std::max(0.0, std::min(now_, last_arrival_) - r.start);
    if (!sj.tenant.empty()) {
      const double from = std::max(r.start, options_.tenant_window_start_s);
      const double to = std::min(now_, options_.tenant_window_start_s + options_.tenant_window_s);
      if (to > from) result_.tenant_gpu_hours[sj.tenant] += r.gpus * (to - from) / 3600.0;
      if (to > from && r.uncontested) result_.tenant_uncontested_gpu_hours[sj.tenant] += r.gpus * (to - from) / 3600.0;
    }
    if (queue_) {
      if (completed) queue_->ack(j, w.spec->id);
      else queue_->requeue(j, w.spec->id);
    }
    w.running.erase(j);
    reload(w);
    s.worker = -1;
    if (completed) {
      if (options_.estimates && sj.req.scheduling.estimated_duration_seconds) {  // as the broker reads its completed jobs
        ran_vs_declared_.push_back((now_ - r.start) / *sj.req.scheduling.estimated_duration_seconds);
        if (ran_vs_declared_.size() > broker::estimate::kOverrunsKept) ran_vs_declared_.pop_front();
      }
      if (s.started_vs_late && s.epoch == 1) {  // its first attempt: the broker reads attempt 1 only
        started_vs_late_.push_back(*s.started_vs_late);
        if (started_vs_late_.size() > broker::estimate::kOverrunsKept) started_vs_late_.pop_front();
      }
      useful_gpu_s_ += r.gpus * progress;
      s.done = true;
      result_.makespan_s = std::max(result_.makespan_s, now_);
      return;
    }
    // Preempted: work since the last checkpoint is lost (none with checkpoint_on_preempt).
    const auto& ck = sj.req.scheduling.checkpoint;
    double saved = 0;
    if (ck.enabled) saved = ck.on_preempt ? progress : std::floor(progress / ck.interval_s) * ck.interval_s;
    useful_gpu_s_ += r.gpus * saved;
    result_.lost_gpu_hours += r.gpus * (progress - saved) / 3600.0;
    s.remaining = std::max(0.0, s.remaining - saved);
    enqueue(j);
  }

  // ----- preemption (ours): the broker's controller pass -----

  // Worker w's jobs as the broker's preemption sees them (running_job_from): class,
  // preemptible, grace period, progress lost if preempted now (since the last
  // checkpoint, else the start).
  std::vector<broker::RunningJob> running_view(const WorkerState& w) const {
    std::vector<broker::RunningJob> out;
    for (const auto& [id, r] : w.running) {
      const auto& req = job(id).req;
      broker::RunningJob rj;
      rj.job_id = std::to_string(id);
      rj.tenant = job(id).tenant;
      rj.class_rank = broker::priority_class_rank(req);
      rj.preemptible = req.scheduling.preemptible;
      rj.preempting = r.preempting;
      rj.gpus = r.gpus;
      rj.devices = r.devices;
      rj.grace_period_s = req.scheduling.grace_period_s;
      rj.checkpoint_on_preempt = req.scheduling.checkpoint.on_preempt;
      const auto& ck = req.scheduling.checkpoint;
      double since = r.start;
      if (ck.enabled && ck.interval_s > 0 && now_ > r.work_start)
        since = std::max(since, r.work_start + std::floor((now_ - r.work_start) / ck.interval_s) * ck.interval_s);
      rj.lost_ms = static_cast<std::int64_t>(std::llround((now_ - since) * 1000));
      out.push_back(std::move(rj));
    }
    return out;
  }

  // The broker's capacity preemption pass (capacity_preemption.cpp through
  // broker::plan_capacity_preemption): each class head that may preempt
  // (broker::may_preempt), has no preemption pending and fits no worker gets the
  // cheapest victims on a worker not held; they stop at their grace period's end and
  // the worker is held for its class until it is claimed or the hold lapses.
  void preempt_waiting() {
    for (auto& w : workers_)
      if (w.hold.job >= 0) {
        auto& p = jobs_[static_cast<std::size_t>(w.hold.job)];
        if (w.hold.until <= now_ || p.worker >= 0 || p.done) {
          p.preemption_pending = false;
          w.hold.job = -1;
        }
      }
    // The class heads the controller reads: under `priority` the simulator's order is the
    // ready sets'; under the other policies Redis is asked (one round trip).
    std::vector<int> waiting;
    std::vector<std::string> ids;
    for (const int c : classes_by_id_)
      if (!classes_[static_cast<std::size_t>(c)].pending.empty()) {
        waiting.push_back(c);
        ids.push_back(classes_[static_cast<std::size_t>(c)].id);
      }
    const bool ask = options_.queue_policy != broker::QueuePolicy::priority && queue_;
    const auto heads = ask ? queue_->ready_heads(ids) : std::vector<int>{};
    // Under fair's tenant order, the share rule on victims of another tenant.
    std::optional<std::optional<broker::FairShares>> shares;
    for (std::size_t k = 0; k < waiting.size(); ++k) {
      const int c = waiting[k];
      auto& cls = classes_[static_cast<std::size_t>(c)];
      const int j = ask ? heads[k] : std::get<2>(*cls.pending.begin());
      if (j < 0) continue;
      auto& s = jobs_[static_cast<std::size_t>(j)];
      const int rank = broker::priority_class_rank(job(j).req);  // the head's own (a class mixes priority classes)
      if (s.preemption_pending || !broker::may_preempt(*cls.req, rank)) continue;
      std::vector<broker::PreemptionSite> sites;
      std::vector<int> index;
      for (std::size_t wi = 0; wi < workers_.size(); ++wi) {
        const auto& w = workers_[wi];
        if (w.hold.job >= 0 || w.reservation.job >= 0) continue;  // held for another preemptor or a reservation
        sites.push_back({&w.caps, {}});
        index.push_back(static_cast<int>(wi));
      }
      result_.judgements += static_cast<long long>(sites.size());
      if (!shares) shares = ask && options_.queue_policy == broker::QueuePolicy::fair ? queue_->fair_shares() : std::nullopt;
      const auto plan = broker::plan_capacity_preemption(
          *cls.req, rank, sites, [&](std::size_t k) { return running_view(workers_[static_cast<std::size_t>(index[k])]); }, {},
          broker::fair_victims(*shares, "", job(j).tenant, cls.req->gpu_count()));
      if (!plan.worker) continue;
      const int wi = index[*plan.worker];
      auto& w = workers_[static_cast<std::size_t>(wi)];
      w.hold.victims = plan.choice.victims;
      for (const auto& v : plan.choice.victims) {
        const int id = std::stoi(v.job_id);
        w.running.at(id).preempting = true;
        w.running.at(id).preempt_end = now_ + v.grace_period_s;
        ++result_.preemptions;
        push({now_ + v.grace_period_s, 0, EventType::grace_end, id, wi, jobs_[static_cast<std::size_t>(id)].epoch});
      }
      const auto gone_ms = broker::victims_gone_by(plan.choice.victims, static_cast<std::int64_t>(std::llround(now_ * 1000)));
      w.hold.job = j;
      w.hold.cls = c;
      w.hold.until = static_cast<double>(gone_ms) / 1000 + options_.backfill_hold_s;
      push({w.hold.until + 0.001, 0, EventType::wake, j, -1, 0});  // the controller drops a lapsed hold
      s.preemption_pending = true;
    }
  }

  // Per worker type: offered load (all work that fits it; and split over the pools
  // each job fits, by their GPUs) and what it did while jobs arrived.
  void pool_results() {
    if (last_arrival_ <= 0) return;
    std::map<std::string, double> fit_s, share_s;
    std::vector<const WorkerState*> by_type(static_cast<std::size_t>(types_), nullptr);
    for (const auto& w : workers_) by_type[static_cast<std::size_t>(w.type)] = &w;
    for (std::size_t i = 0; i < jobs_.size(); ++i) {
      const auto& j = trace_[i];
      const double work = j.work_s * j.req.gpu_count();
      if (work <= 0) continue;
      double fitting_gpus = 0;
      std::vector<const WorkerState*> fitting;
      for (const auto* w : by_type)
        if (w && w->caps.gpu.count > 0 && fits_static(jobs_[i].cls, *w)) {
          fitting.push_back(w);
          fitting_gpus += pool_gpus_[w->spec->type];
        }
      for (const auto* w : fitting) {
        fit_s[w->spec->type] += work;
        share_s[w->spec->type] += work * pool_gpus_[w->spec->type] / fitting_gpus;
      }
    }
    for (const auto& [type, gpus] : pool_gpus_) {
      if (gpus <= 0) continue;
      auto& p = result_.pools[type];
      const double capacity = gpus * last_arrival_;
      p.gpus = gpus;
      p.offered_fit = fit_s[type] / capacity;
      p.offered_share = share_s[type] / capacity;
      p.utilization = pool_allocated_s_[type] / capacity;
      p.stranded = pool_stranded_s_[type] / capacity;
    }
  }

  // ----- backfill (ours) -----

  // The broker's backfill pass (broker/preemption/backfill_reservations.cpp), with
  // the same rules: the oldest job of each GPU class that waited backfill_after_s and
  // fits no worker now gets the worker where the declared ends free enough GPUs soonest.
  void plan_backfill() {
    for (auto& w : workers_)
      if (w.reservation.job >= 0 && w.reservation.until <= now_) {  // running jobs overran: plan again
        jobs_[static_cast<std::size_t>(w.reservation.job)].reserved_on = -1;
        w.reservation.job = -1;
      }
    const auto now_ms = static_cast<std::int64_t>(std::llround(now_ * 1000));
    // Class heads in the broker pass's order (broker::backfill_order: larger first).
    std::vector<std::pair<std::tuple<int, double, double>, std::size_t>> heads;
    for (std::size_t c = 0; c < classes_.size(); ++c)
      if (!classes_[c].pending.empty() && classes_[c].req->gpu_count() > 0) {
        const auto& [rank, seq, j] = *classes_[c].pending.begin();
        heads.emplace_back(broker::backfill_order(rank + static_cast<double>(seq), classes_[c].req->gpu_count()), c);
      }
    std::sort(heads.begin(), heads.end());
    for (const auto& [order, c] : heads) {
      auto& cls = classes_[c];
      const int j = std::get<2>(*cls.pending.begin());
      auto& s = jobs_[static_cast<std::size_t>(j)];
      if (s.reserved_on >= 0 || now_ - s.queued_since < options_.backfill_after_s) continue;
      std::vector<broker::BackfillCandidate> candidates;
      std::vector<int> index;
      for (std::size_t wi = 0; wi < workers_.size(); ++wi) {
        auto& w = workers_[wi];
        // Not a worker already held, for a reservation or for a preemptor: the broker's
        // pass skips every worker with a hold (a worker carries one hold mark at most).
        if (w.reservation.job >= 0 || w.hold.job >= 0 || !fits_static(static_cast<int>(c), w)) continue;
        broker::BackfillCandidate candidate{&w.caps, {}, {}};
        for (const auto& [id, r] : w.running) {
          broker::RunningJob rj;
          rj.job_id = std::to_string(id);
          rj.gpus = r.gpus;
          rj.devices = r.devices;
          rj.declared_end_ms = static_cast<std::int64_t>(std::llround(r.declared_end * 1000));
          candidate.running.push_back(std::move(rj));
        }
        candidates.push_back(std::move(candidate));
        index.push_back(static_cast<int>(wi));
      }
      result_.judgements += static_cast<long long>(candidates.size());
      const auto plan = broker::plan_backfill(*cls.req, candidates, now_ms);
      if (plan.fits_now || plan.candidate < 0 || plan.start_ms - now_ms > options_.backfill_max_start_s * 1000) continue;
      auto& w = workers_[static_cast<std::size_t>(index[static_cast<std::size_t>(plan.candidate)])];
      w.reservation.job = j;
      w.reservation.cls = static_cast<int>(c);
      w.reservation.gpus = cls.req->gpu_count();
      w.reservation.start = static_cast<double>(plan.start_ms) / 1000;
      w.reservation.until = w.reservation.start + options_.backfill_hold_s;
      s.reserved_on = index[static_cast<std::size_t>(plan.candidate)];
      ++result_.backfill_reservations;
      // Wake at the end of the hold (a poll happens at every event anyway).
      push({w.reservation.until + 0.001, 0, EventType::wake, j, -1, 0});
    }
  }

  SimResult finish() {
    auto& r = result_;
    r.policy = options_.policy == Policy::ours ? std::string("ours/") + broker::governance::policy_name(options_.queue_policy) +
                                                     (options_.backfill ? "+bf" : "")
                                               : "fifo-first-fit";
    r.jobs = static_cast<int>(jobs_.size());
    std::map<std::string, std::vector<double>> waits;
    for (std::size_t i = 0; i < jobs_.size(); ++i) {
      if (!jobs_[i].done) {
        ++r.unfinished;
        continue;
      }
      ++r.finished;
      const auto& pc = trace_[i].req.scheduling.priority_class;
      const std::string name = !pc ? "on-demand" : *pc == ml::PriorityClass::spot ? "spot"
                                                 : *pc == ml::PriorityClass::reserved ? "reserved" : "on-demand";
      waits[name].push_back(jobs_[i].waited);
    }
    for (auto& [name, v] : waits) r.wait_s[name] = percentiles(v);
    std::vector<double> waits8;
    for (std::size_t i = 0; i < jobs_.size(); ++i)
      if (jobs_[i].done && trace_[i].req.gpu_count() == 8) waits8.push_back(jobs_[i].waited);
    r.wait_8gpu_s = percentiles(waits8);
    if (options_.estimates) estimate_accuracy();
    pool_results();
    if (r.makespan_s > 0 && total_gpus_ > 0) {
      r.gpu_utilization = allocated_gpu_s_ / (total_gpus_ * r.makespan_s);
      r.useful_utilization = useful_gpu_s_ / (total_gpus_ * r.makespan_s);
    }
    if (last_arrival_ > 0 && total_gpus_ > 0) {
      r.offered_load = offered_gpu_s_ / (total_gpus_ * last_arrival_);
      r.arrival_utilization = arrival_allocated_gpu_s_ / (total_gpus_ * last_arrival_);
    }
    r.stranded_gpu_hours = stranded_gpu_s_ / 3600.0;
    if (last_arrival_ > 0 && total_gpus_ > 0) r.arrival_stranded = stranded_gpu_s_ / (total_gpus_ * last_arrival_);
    return r;
  }
};

}  // namespace

SimResult simulate(const std::vector<SimJob>& trace, const std::vector<WorkerSpec>& workers, const SimOptions& options) {
  return Simulation(trace, workers, options).run();
}

}  // namespace ojs::bench
