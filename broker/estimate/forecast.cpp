// Placement run forward in time over a copy of the queue's state (pure).
#include "broker/estimate/forecast.hpp"
#include "broker/estimate/never_fits.hpp"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include "broker/preemption/capacity_plan.hpp"
#include "broker/scheduling/claim_decision.hpp"
#include "broker/scheduling/fair_order.hpp"
#include "broker/scheduling/queue_budget.hpp"
#include "broker/store/priority_score.hpp"
#include "ojs/core/time.hpp"
#include "ojs/ml/predicates.hpp"

namespace ojs::broker::estimate {

namespace {

// Past a year of simulated time an estimate says nothing useful: the run stops.
constexpr std::int64_t kHorizonMs = 366LL * 24 * 3600 * 1000;
// A bound on the instants one run visits (each ends a job or makes one due): a queue
// of the snapshot's size (the service reads at most kMaxWaiting) needs far fewer.
constexpr int kMaxInstants = 200000;

// When a job preferring a model may take a worker without it (0: it prefers none).
std::int64_t locality_hold_end(const Waiting& job, const ml::ScoringOptions& scoring) {
  return job.req->soft.locality_model_id.empty() ? 0 : job.enqueued_ms + scoring.locality_delay_ms;
}

// One forward run over a copy of the snapshot.
//
// The waiting jobs are kept per class in score order (one not yet due joins at its due
// time); at each instant the claim's decision (decide) names the next job, and the
// run starts it on the first workers that fit. Whether a class fits a worker depends
// on the class and the worker only, so a class no worker took stays full for the
// instant, and later only the workers something left since (dirty) can change that,
// or the end of a job's locality hold.
class Run {
 public:
  explicit Run(const Snapshot& s) : s_(s), workers_(s.workers), limits_(s.limits), loads_(s.workers.size()) {
    if (s.fair) fair_layout_ = fair_layout_from(s.fair_layout_json);
    fair_now_ = s.fair;
    for (const auto& w : workers_)
      for (const auto& r : w.running) initial_.insert(r.job.job_id);
    const auto& b = s.limits.budget;
    limited_ = b.max_gpus || b.max_jobs || b.max_gpu_mem_mb || b.max_tpu_chips || !s.limits.tenants.limits.empty();
    for (const auto& w : s.waiting) add(w);
    for (const auto& h : s.holds) {  // preemptions the controller already started
      const auto w = std::find_if(workers_.begin(), workers_.end(), [&](const Worker& x) { return x.id == h.worker_id; });
      if (w == workers_.end() || h.until_ms <= s.now_ms) continue;
      if (h.backfill) {
        reserved_.insert(static_cast<std::size_t>(w - workers_.begin()));
        continue;
      }
      Hold hold{kNoJob, -1, h.until_ms};
      if (const auto c = class_index_.find(h.class_id); !h.class_id.empty() && c != class_index_.end()) hold.cls = c->second;
      for (std::size_t i = 0; i < jobs_.size(); ++i)
        if (jobs_[i].w.id == h.for_job) {
          hold = {i, jobs_[i].cls, h.until_ms};
          pending_.insert(i);
        }
      holds_[static_cast<std::size_t>(w - workers_.begin())] = hold;
    }
  }

  // Whether the run reached its work bound (Snapshot::max_work): it placed no more.
  bool exhausted() const { return work_ > s_.max_work; }

  // What kept job `i` from a start at the last instant (only recorded for `watch_`).
  std::size_t watch_ = static_cast<std::size_t>(-1);
  std::set<std::string> kept_by_;
  std::vector<std::string> preempted_for_watch_;  // victims the run preempted for the watched job
  // Initial running jobs the run ended: per worker, and those charged to the queue.
  std::vector<std::vector<std::pair<std::string, EndSource>>> ended_on_ = {};
  std::vector<std::pair<std::string, EndSource>> ended_charged_;

  // One instant: the jobs ended by `t` leave, the jobs due by `t` join, then the waiting jobs take what fits.
  void instant(std::int64_t t, const std::function<void(std::size_t, const Placement&)>& placed) {
    release(t);
    arrive(t);
    place(t, placed);
    if (s_.preemption) preempt(t);
  }

  // The next instant after `t` at which anything can change; nullopt when none does.
  std::optional<std::int64_t> next_after(std::int64_t t) const {
    std::optional<std::int64_t> next;
    auto consider = [&](std::int64_t at) {
      if (at > t && (!next || at < *next)) next = at;
    };
    for (const auto& w : workers_)
      for (const auto& r : w.running)
        if (r.job.declared_end_ms) consider(*r.job.declared_end_ms);
    if (auto it = wakes_.upper_bound({t, std::numeric_limits<std::size_t>::max()}); it != wakes_.end()) consider(it->first);
    for (const auto& [w, hold] : holds_) consider(hold.until_ms);
    return next;
  }

  // Running jobs without a known end on workers whose hardware could take `req`.
  int endless_on_fitting(const ml::Requirements& req) const {
    std::set<std::string> ids;
    for (const auto& w : workers_)
      if (ml::fits_static(req, &w.caps))
        for (const auto& r : w.running)
          if (!r.job.declared_end_ms) ids.insert(r.job.job_id);
    return static_cast<int>(ids.size());
  }

 private:
  // A waiting job of the run.
  struct Job {
    const Waiting& w;
    int cls = 0;
    bool placed = false;
  };
  using Key = std::pair<double, std::size_t>;  // (score, job): the queue's order

  void add(const Waiting& w) {
    auto [it, added] = class_index_.emplace(w.class_id, static_cast<int>(classes_.size()));
    if (added) {
      classes_.emplace_back();
      scanned_.push_back(false);
    }
    const std::size_t i = jobs_.size();
    jobs_.push_back({w, it->second, false});
    job_index_.emplace(w.id, i);
    if (w.req->hard.gang.size > 0) gangs_ = true;  // a forming gang holds workers again at each instant: every worker is looked at
    if (w.due_ms > s_.now_ms) wakes_.insert({w.due_ms, i});
    else classes_[static_cast<std::size_t>(it->second)].insert({w.score, i});
    if (const auto hold = locality_hold_end(w, s_.scoring); hold > s_.now_ms) wakes_.insert({hold, i});
  }

  // The jobs due by `t` join their classes.
  void arrive(std::int64_t t) {
    while (!wakes_.empty() && wakes_.begin()->first <= t) {
      const std::size_t i = wakes_.begin()->second;
      wakes_.erase(wakes_.begin());
      auto& job = jobs_[i];
      if (job.placed) continue;
      if (job.w.due_ms <= t) classes_[static_cast<std::size_t>(job.cls)].insert({job.w.score, i});
      scanned_[static_cast<std::size_t>(job.cls)] = false;  // due now or its locality hold ended: every worker is looked at
    }
  }

  const ml::WorkerLoad& load(std::size_t w) {
    auto& cached = loads_[w];
    if (!cached) {
      std::vector<RunningJob> jobs;
      for (const auto& r : workers_[w].running) jobs.push_back(r.job);
      cached = load_without(jobs, {}, workers_[w].drained);
    }
    return *cached;
  }

  bool fits_static(const Waiting& job, std::size_t w) {
    const auto key = std::make_pair(job.class_id, w);
    auto it = static_fit_.find(key);
    if (it == static_fit_.end()) it = static_fit_.emplace(key, ml::fits_static(*job.req, &workers_[w].caps)).first;
    return it->second;
  }

  void release(std::int64_t t) {
    if (ended_on_.size() != workers_.size()) ended_on_.resize(workers_.size());
    std::set<std::string> freed_jobs;
    for (std::size_t w = 0; w < workers_.size(); ++w) {
      auto& running = workers_[w].running;
      for (auto it = running.begin(); it != running.end();) {
        if (!it->job.declared_end_ms || *it->job.declared_end_ms > t) {
          ++it;
          continue;
        }
        dirty_.insert(w);
        if (it->charged) {
          if (limited_) all_dirty_ = true;  // the budget or a quota has room again: any worker may now do
          limits_.budget.gpus_in_use -= it->job.gpus;
          limits_.budget.tpu_chips_in_use -= it->tpu_chips;
          if (it->job.gpus > 0 && freed_jobs.insert(it->job.job_id).second) limits_.budget.gpu_jobs -= 1;
          if (!it->tenant.empty()) limits_.tenants.used[it->tenant] -= it->job.gpus;
          fair_held(it->tenant, -it->job.gpus);
        }
        if (initial_.count(it->job.job_id)) {
          ended_on_[w].emplace_back(it->job.job_id, it->source);
          if (it->charged) ended_charged_.emplace_back(it->job.job_id, it->source);
        }
        it = running.erase(it);
        loads_[w].reset();
      }
    }
  }

  // Whether a worker something left since the last pass could take class `c` (statically).
  bool fits_a_dirty(int c, const std::set<std::size_t>& dirty) {
    const auto& job = jobs_[classes_[static_cast<std::size_t>(c)].begin()->second].w;
    return std::any_of(dirty.begin(), dirty.end(), [&](std::size_t w) { return fits_static(job, w); });
  }

  void note(std::size_t i, const std::string& what) {
    if (i == watch_) kept_by_.insert(what);
  }
  // The watched job, when it waits in class `c` behind the job that stopped the class.
  bool watched_in(int c, const Key& from) const {
    if (watch_ >= jobs_.size() || jobs_[watch_].placed || jobs_[watch_].cls != c) return false;
    const auto& pending = classes_[static_cast<std::size_t>(c)];
    const Key key{jobs_[watch_].w.score, watch_};
    return pending.count(key) && key > from;
  }

  // Counts a placement check on worker `w`; false once the run is past its bound.
  bool spend(std::size_t w) {
    work_ += 1 + workers_[w].caps.devices.size();
    return !exhausted();
  }
  std::size_t work_ = 0;

  // Starts waiting job `i` of class `c` at `t` on the chosen workers: they run it, the
  // budget and its tenant's quota count its GPUs (the budget its TPU chips), a hold
  // the class waited for ends.
  Placement start(std::size_t i, int c, std::int64_t t, const std::vector<std::pair<std::size_t, std::vector<int>>>& chosen,
                  long long gpus) {
    const Waiting& job = jobs_[i].w;
    const ml::Requirements& req = *job.req;
    Placement p{job.id, job.tenant, {}, t, std::nullopt, std::nullopt};
    if (job.run_ms) p.end_ms = t + *job.run_ms;
    const long long tpu = charged_tpu_chips(req);
    for (const auto& [w, devices] : chosen) {
      Running r;
      r.job.job_id = job.id;
      r.job.gpus = req.gpu_count();
      r.job.devices = devices;
      r.job.declared_end_ms = p.end_ms;
      r.source = job.run_source;
      r.charged = true;
      r.tenant = job.tenant;
      r.tpu_chips = p.worker_ids.empty() ? tpu : 0;  // given back once, by its first member's end
      r.job.class_rank = job.class_rank;  // what preemption in the run weighs
      r.job.preemptible = req.scheduling.preemptible;
      r.job.grace_period_s = req.scheduling.grace_period_s;
      r.job.lost_ms = s_.now_ms - t;  // progress since its start, once preempt() adds t' - now
      workers_[w].running.push_back(std::move(r));
      loads_[w].reset();
      if (const auto h = holds_.find(w); h != holds_.end() && h->second.cls == c) end_hold(h);  // the preemptor's class took it
      p.worker_ids.push_back(workers_[w].id);
    }
    limits_.budget.tpu_chips_in_use += tpu;
    if (gpus > 0) {
      limits_.budget.gpus_in_use += gpus;
      limits_.budget.gpu_jobs += 1;
      if (!job.tenant.empty()) limits_.tenants.used[job.tenant] += gpus;
      fair_held(job.tenant, gpus);
    }
    jobs_[i].placed = true;
    return p;
  }

  // The first job of class `c` this instant has not passed over.
  std::set<Key>::const_iterator first_open(int c, const std::set<std::size_t>& passed) const {
    const auto& pending = classes_[static_cast<std::size_t>(c)];
    auto it = pending.begin();
    while (it != pending.end() && passed.count(it->second)) ++it;
    return it;
  }

  // Which job goes next at `t`: the decision FETCH makes (decide_claim: the queue's
  // order, its budget, its tenants' quotas, read as deep as FETCH reads), over the
  // classes in play, each offering its jobs from the first not passed over. The run
  // judges workers after it, so it decides without the soft-score bonus (by_bonus)
  // and without a locality cutoff (the run holds a job per worker itself:
  // ml::locality_hold). Under the fair policy the decision is handed the run's
  // shares and each class's candidates as FETCH lists them (fair_candidates_of). A
  // class the decision keeps back leaves play: within an instant the budget and
  // quotas only fill.
  std::optional<std::pair<std::size_t, int>> decide(std::int64_t t, std::set<int>& in_play,
                                                    std::map<int, std::set<std::size_t>>& passed) {
    while (!in_play.empty()) {
      std::vector<std::pair<Key, int>> heads;  // the classes in play by their first open job
      for (auto c = in_play.begin(); c != in_play.end();) {
        const auto it = first_open(*c, passed[*c]);
        if (it == classes_[static_cast<std::size_t>(*c)].end()) {
          c = in_play.erase(c);
          continue;
        }
        heads.push_back({*it, *c++});
      }
      if (heads.empty()) return std::nullopt;
      std::sort(heads.begin(), heads.end());  // ties in the decision's order keep this one
      ClaimSnapshot snap;
      snap.tenant_quotas = !limits_.tenants.limits.empty();
      snap.budget = limits_.budget;
      snap.now_ms = t;
      std::vector<EligibleClass> eligible;
      for (const auto& [key, c] : heads) {
        EligibleClass e;
        e.id = jobs_[key.second].w.class_id;
        e.gpus = static_cast<int>(charged_gpus(key.second));
        e.tpu_chips = static_cast<int>(charged_tpu_chips(*jobs_[key.second].w.req));
        eligible.push_back(std::move(e));
        snap.heads.emplace_back(eligible.back().id, key.first);
      }
      ClaimDecisionInput in{snap, eligible, 1, t};
      in.by_bonus = false;
      FairDetail fair;
      if (fair_now_) {
        snap.fair = true;
        fair.quotas = limits_.tenants;
        for (const auto& [key, c] : heads) fair.classes[jobs_[key.second].w.class_id] = fair_candidates(c, passed[c]);
        in.fair = &fair;
        in.fair_layout = &fair_layout_;
        in.fair_shares = &*fair_now_;
      }
      ClaimPlan plan = decide_claim(in);
      ReadyDetail detail;
      if (!plan.needs_jobs.empty()) {  // the classes' first jobs, as FETCH reads them
        detail.quotas = limits_.tenants;
        for (const auto& id : plan.needs_jobs) {
          const int c = class_index_.at(id);
          auto& jobs = detail.jobs[id];
          const auto& pending = classes_[static_cast<std::size_t>(c)];
          for (auto it = first_open(c, passed[c]); it != pending.end() && static_cast<int>(jobs.size()) < plan.depth; ++it)
            if (!passed[c].count(it->second)) jobs.push_back({jobs_[it->second].w.id, it->first, jobs_[it->second].w.tenant, std::nullopt});
        }
        in.detail = &detail;
        plan = decide_claim(in);
      }
      const std::size_t before = in_play.size();
      for (const auto& block : plan.blocked) {
        const int c = class_index_.at(block.class_id);
        in_play.erase(c);
        if (watched_open(c, passed)) note(watch_, block.kind.rfind("tenant_quota", 0) == 0 ? "tenant_quota" : block.kind);
      }
      if (!plan.picks.empty()) {
        const auto& pick = plan.picks.front();
        const int c = class_index_.at(pick.class_id);
        const std::size_t i = pick.job_id.empty() ? first_open(c, passed[c])->second : job_index_.at(pick.job_id);
        // The watched job passed over for its tenant's quota, a later job of its class taken.
        if (watched_open(c, passed) && jobs_[i].w.score > jobs_[watch_].w.score &&
            tenant_quota_block(limits_.tenants, "", jobs_[watch_].w.tenant, charged_gpus(watch_)))
          note(watch_, "tenant_quota");
        return std::make_pair(i, c);
      }
      if (in_play.size() == before) return std::nullopt;  // nothing kept back, nothing offered
    }
    return std::nullopt;
  }

  // GPUs job `i` charges to the budget and its tenant's quota: a gang's members' together.
  long long charged_gpus(std::size_t i) const {
    const auto& req = *jobs_[i].w.req;
    return static_cast<long long>(req.gpu_count()) * members_of(req);
  }

  // Whether the watched job waits in class `c`, due and not passed over.
  bool watched_open(int c, std::map<int, std::set<std::size_t>>& passed) const {
    if (watch_ >= jobs_.size() || jobs_[watch_].placed || jobs_[watch_].cls != c) return false;
    return classes_[static_cast<std::size_t>(c)].count({jobs_[watch_].w.score, watch_}) && !passed[c].count(watch_);
  }

  void place(std::int64_t t, const std::function<void(std::size_t, const Placement&)>& placed) {
    if (ended_on_.size() != workers_.size()) ended_on_.resize(workers_.size());
    std::set<std::size_t> held;  // workers a forming gang holds at this instant
    // Only the workers something left since the last instant can take a class that did
    // not fit then (the others only gained load), unless the budget freed or a gang
    // waits: then every worker is looked at.
    const bool all = all_dirty_ || gangs_;
    const std::set<std::size_t> dirty = std::move(dirty_);
    dirty_.clear();
    all_dirty_ = false;
    std::set<int> in_play;  // classes that may still take a job at this instant
    for (std::size_t c = 0; c < classes_.size(); ++c)
      if (!classes_[c].empty() && (all || !scanned_[c] || fits_a_dirty(static_cast<int>(c), dirty))) in_play.insert(static_cast<int>(c));
    std::map<int, std::set<std::size_t>> passed;  // per class: jobs a locality hold kept off every worker that fits
    while (const auto next = decide(t, in_play, passed)) {
      const auto [i, c] = *next;
      auto& pending = classes_[static_cast<std::size_t>(c)];
      const Key key{jobs_[i].w.score, i};
      const Waiting& job = jobs_[i].w;
      const ml::Requirements& req = *job.req;
      const int members = members_of(req);
      const bool every_worker = all || !scanned_[static_cast<std::size_t>(c)];
      // Workers that fit one member now, with the devices each would get.
      std::vector<std::pair<std::size_t, std::vector<int>>> fit;
      bool locality_held = false;  // a worker fits but lacks the model the job waits for
      for (std::size_t w = 0; w < workers_.size(); ++w) {
        if (!every_worker && !dirty.count(w)) continue;
        if (held.count(w) || !fits_static(job, w)) continue;
        if (const auto h = holds_.find(w); h != holds_.end() && h->second.cls != c) continue;  // freed for a preemptor
        if (!spend(w)) return;
        if (!ml::fits(req, &workers_[w].caps, load(w), s_.assignment)) continue;
        if (ml::locality_hold(req, &workers_[w].caps, t - job.enqueued_ms, s_.scoring)) {
          locality_held = true;
          continue;
        }
        fit.emplace_back(w, ml::judge_dynamic(req, &workers_[w].caps, load(w), s_.assignment).devices);
        if (members == 1) break;
      }
      const auto chosen = choose_members(req, fit);
      if (!chosen) {
        if (members > 1) {
          for (const auto& [w, devices] : fit) held.insert(w);  // the forming gang holds them
          note(i, "gang_forming");
          if (watched_in(c, key)) note(watch_, "gang_forming");
          in_play.erase(c);  // the class's next gang would find those workers held
          continue;
        }
        if (locality_held) {  // the class's next job may have waited past its hold
          note(i, "locality_hold");
          passed[c].insert(i);
          continue;
        }
        if (every_worker && held.empty()) scanned_[static_cast<std::size_t>(c)] = true;  // full: only what frees can change that
        if (i == watch_) note_busy(i, held);
        else if (watched_in(c, key)) note_busy(watch_, held);
        in_play.erase(c);
        continue;
      }
      const auto p = start(i, c, t, *chosen, charged_gpus(i));
      scanned_[static_cast<std::size_t>(c)] = false;  // the scan stopped at the first worker that fit
      pending.erase(key);
      placed(i, p);
    }
  }

  // The run's placements and ends move what a tenant's jobs of this queue hold in
  // the shares it decides by; only where the shares are of GPUs.
  void fair_held(const std::string& tenant, long long gpus) {
    if (!fair_now_ || fair_now_->resource == 2 || gpus == 0) return;
    fair_hold_amount(*fair_now_, tenant, static_cast<double>(gpus));
  }

  // Class `c`'s candidates under the fair order, listed from its due jobs not
  // passed over as FETCH lists them from its ready set.
  std::vector<FairCandidate> fair_candidates(int c, const std::set<std::size_t>& passed) const {
    const auto& pending = classes_[static_cast<std::size_t>(c)];
    const ReadyRange range = [&](double low, double high, int n) {
      std::vector<FairCandidate> out;
      for (auto it = pending.lower_bound({low, 0}); it != pending.end() && it->first < high && static_cast<int>(out.size()) < n; ++it) {
        if (passed.count(it->second)) continue;
        const Waiting& w = jobs_[it->second].w;
        FairCandidate j;
        j.id = w.id;
        j.score = w.score;
        j.tenant = w.tenant;
        j.enqueued_ms = w.enqueued_ms;
        out.push_back(std::move(j));
      }
      return out;
    };
    return fair_candidates_of(range, fair_layout_, 1);
  }

  // A worker freed by preemption, held for the preemptor's class (the FETCH guard
  // `capacity_hold`) until its class takes it or the hold lapses.
  static constexpr std::size_t kNoJob = static_cast<std::size_t>(-1);  // a hold for another queue's job
  struct Hold {
    std::size_t job = kNoJob;
    int cls = 0;
    std::int64_t until_ms = 0;
  };

  void end_hold(std::map<std::size_t, Hold>::iterator h) {
    pending_.erase(h->second.job);
    dirty_.insert(h->first);  // other classes may look at the worker again
    holds_.erase(h);
  }

  // The preemption controller's pass at `t`: each class head that may preempt, has no
  // preemption pending and fits no worker gets the cheapest victims on a worker not
  // already held (plan_capacity_preemption); they end at their grace period's end.
  void preempt(std::int64_t t) {
    for (auto h = holds_.begin(); h != holds_.end();) {
      if (h->second.until_ms <= t || (h->second.job != kNoJob && jobs_[h->second.job].placed)) end_hold(h++);
      else ++h;
    }
    std::vector<Key> heads;
    for (const auto& pending : classes_)
      if (!pending.empty()) {
        const auto& head = jobs_[pending.begin()->second].w;
        if (may_preempt(*head.req, head.class_rank) && !pending_.count(pending.begin()->second)) heads.push_back(*pending.begin());
      }
    std::sort(heads.begin(), heads.end());
    for (const auto& [score, i] : heads) {
      const Waiting& job = jobs_[i].w;
      std::vector<PreemptionSite> sites;
      std::vector<std::size_t> index;
      for (std::size_t w = 0; w < workers_.size(); ++w) {
        if (holds_.count(w) || reserved_.count(w) || !fits_static(job, w)) continue;  // held: the controller passes it
        sites.push_back({&workers_[w].caps, workers_[w].drained});
        index.push_back(w);
      }
      const auto plan = plan_capacity_preemption(
          *job.req, job.class_rank, sites,
          [&](std::size_t k) {
            std::vector<RunningJob> running;
            for (const auto& r : workers_[index[k]].running) {
              running.push_back(r.job);
              running.back().lost_ms += t - s_.now_ms;
              running.back().young = t < r.job.young_until_ms;  // a job protected now may not be by then
            }
            return running;
          },
          s_.assignment);
      if (!plan.worker) continue;
      const std::size_t w = index[*plan.worker];
      std::set<std::string> victims;
      for (const auto& v : plan.choice.victims) {
        victims.insert(v.job_id);
        const std::int64_t gone = t + static_cast<std::int64_t>(v.grace_period_s) * 1000;
        for (auto& worker : workers_)  // a gang's member goes down with it everywhere
          for (auto& r : worker.running)
            if (r.job.job_id == v.job_id && !r.job.preempting) {
              r.job.preempting = true;
              if (!r.job.declared_end_ms || *r.job.declared_end_ms > gone) {
                r.job.declared_end_ms = gone;
                r.source = EndSource::preempted;
              }
            }
      }
      holds_[w] = {i, jobs_[i].cls, victims_gone_by(plan.choice.victims, t) + s_.capacity_hold_ms};
      pending_.insert(i);
      if (i == watch_) preempted_for_watch_.assign(victims.begin(), victims.end());
    }
  }

  // Members for a job among the workers that fit: one, or a gang's size (of one
  // value of its same_label when it names one); nullopt when there are not enough.
  std::optional<std::vector<std::pair<std::size_t, std::vector<int>>>> choose_members(
      const ml::Requirements& req, const std::vector<std::pair<std::size_t, std::vector<int>>>& fit) const {
    const auto members = static_cast<std::size_t>(members_of(req));
    if (req.hard.gang.same_label.empty()) {
      if (fit.size() < members) return std::nullopt;
      return std::vector<std::pair<std::size_t, std::vector<int>>>(fit.begin(), fit.begin() + static_cast<long>(members));
    }
    std::map<std::string, std::vector<std::pair<std::size_t, std::vector<int>>>> by_value;
    for (const auto& f : fit) {
      const auto& labels = workers_[f.first].caps.labels;
      const auto it = labels.find(req.hard.gang.same_label);
      if (it == labels.end()) continue;
      auto& group = by_value[it->second];
      group.push_back(f);
      if (group.size() == members) return group;
    }
    return std::nullopt;
  }

  // Why the watched job found no worker: all busy, or one it would fit held by a forming gang.
  void note_busy(std::size_t i, const std::set<std::size_t>& held) {
    const Waiting& job = jobs_[i].w;
    for (std::size_t w : held)
      if (fits_static(job, w) && spend(w) && ml::fits(*job.req, &workers_[w].caps, load(w), s_.assignment)) {
        note(i, "gang_forming");
        return;
      }
    note(i, "busy");
  }

  const Snapshot& s_;
  std::vector<Worker> workers_;
  Limits limits_;
  std::vector<Job> jobs_;                          // the snapshot's waiting jobs
  std::map<std::string, int> class_index_;
  std::unordered_map<std::string, std::size_t> job_index_;  // job id -> its index, for the decision's picks
  std::vector<std::set<Key>> classes_;             // per class: its due jobs not placed, in the queue's order
  std::vector<bool> scanned_;                      // per class: no worker took it at a pass that looked at every worker
  std::set<std::pair<std::int64_t, std::size_t>> wakes_;  // (due time or locality hold end, job)
  std::vector<std::optional<ml::WorkerLoad>> loads_;
  std::map<std::pair<std::string, std::size_t>, bool> static_fit_;
  std::set<std::string> initial_;
  std::set<std::size_t> dirty_;      // workers a job left since the last placement pass
  std::map<std::size_t, Hold> holds_;  // worker -> the preemptor it is held for
  std::set<std::size_t> pending_;      // jobs a preemption is pending for
  std::set<std::size_t> reserved_;     // workers with a backfill reservation (at the snapshot): no preemption there
  bool all_dirty_ = true;            // look at every worker at the next pass
  bool gangs_ = false;               // a gang waits
  bool limited_ = false;             // the queue has a budget or tenant quotas
  FairLayout fair_layout_;                   // under fair: the queue's tenant slots, weights and order
  std::optional<FairShares> fair_now_;        // under fair: the shares as read, moved by the run's starts and ends
};

}  // namespace

Estimate estimate_start(const Snapshot& s, const std::string& target) {
  Estimate e;
  e.truncated = s.truncated;
  const auto at = std::find_if(s.waiting.begin(), s.waiting.end(), [&](const Waiting& w) { return w.id == target; });
  if (at == s.waiting.end()) {
    e.reason = "the job is not among the queue's waiting jobs";
    return e;
  }
  const auto index = static_cast<std::size_t>(at - s.waiting.begin());
  if (at->req && at->req->hard.gang.size > 0) {
    e.gang_start_size = members_of(*at->req);
    e.gang_max_size = std::max(e.gang_start_size, at->req->hard.gang.max_size);
  }
  e.jobs_ahead = static_cast<int>(index);
  e.position = e.jobs_ahead + 1;
  if (auto why = never_fits(s, *at)) {
    e.status = Estimate::Status::unresolvable;
    e.reason = *why;
    return e;
  }
  Run run(s);
  run.watch_ = index;
  std::optional<Placement> mine;
  int placed_ahead = 0;
  std::int64_t t = s.now_ms;
  for (int step = 0; step < kMaxInstants; ++step) {
    run.instant(t, [&](std::size_t i, const Placement& p) {
      if (i == index) mine = p;
      else if (i < index && !mine) ++placed_ahead;
    });
    if (mine) break;
    if (run.exhausted()) {
      e.truncated = true;
      e.reason = "the run stopped at its work bound (" + std::to_string(s.max_work) + " device checks) before it placed the job";
      break;
    }
    const auto next = run.next_after(t);
    if (!next) {
      const int endless = run.endless_on_fitting(*at->req);
      e.reason = endless > 0 ? "it waits on " + std::to_string(endless) +
                                   " running job(s) that declare no end (no ext_ml_estimated_duration_seconds, no timeout, "
                                   "no learned run time of their type)"
                             : "nothing that ends frees enough for it";
      break;
    }
    if (*next - s.now_ms > kHorizonMs) {
      e.reason = "its start is more than a year away";
      break;
    }
    t = *next;
  }
  if (!mine) {
    if (e.reason.empty()) e.reason = "the run did not reach its start";
    e.kept_by.assign(run.kept_by_.begin(), run.kept_by_.end());
    return e;
  }
  e.status = Estimate::Status::estimated;
  e.start_ms = mine->start_ms;
  e.worker_ids = mine->worker_ids;
  e.placed_ahead = placed_ahead;
  e.kept_by.assign(run.kept_by_.begin(), run.kept_by_.end());
  e.preempts = run.preempted_for_watch_;
  for (const auto& h : s.holds)  // a preemption for it the controller already started, where it starts
    if (h.for_job == target && std::find(e.worker_ids.begin(), e.worker_ids.end(), h.worker_id) != e.worker_ids.end())
      e.preempts = h.victims;
  // The ends it rests on: the running jobs that left the workers it starts on, and
  // those that gave back the budget or quota when that is what kept it.
  std::map<std::string, EndSource> ends;
  for (std::size_t w = 0; w < s.workers.size() && w < run.ended_on_.size(); ++w)
    if (std::find(e.worker_ids.begin(), e.worker_ids.end(), s.workers[w].id) != e.worker_ids.end())
      for (const auto& [id, source] : run.ended_on_[w]) ends.emplace(id, source);
  const bool kept_by_limits = std::any_of(e.kept_by.begin(), e.kept_by.end(), [](const std::string& k) {
    return k == "max_total_gpus" || k == "max_concurrent_gpu_jobs" || k == "max_total_tpu_chips" || k == "tenant_quota";
  });
  if (kept_by_limits)
    for (const auto& [id, source] : run.ended_charged_) ends.emplace(id, source);
  for (const auto& [id, source] : ends) ++e.running_ends[source];
  return e;
}

Estimate estimate_range(const Snapshot& s, const std::string& target) {
  Estimate e = estimate_start(s, target);
  if (e.status != Estimate::Status::estimated) return e;
  e.late_start_ms = e.start_ms;
  if (!has_spread(s)) return e;
  const Estimate late = estimate_start(late_ends(s), target);
  if (late.status == Estimate::Status::estimated) e.late_start_ms = std::max(late.start_ms, e.start_ms);
  else e.late_start_ms.reset();  // the late run could not place it (its work bound, a horizon)
  if (late.truncated) e.truncated = true;
  return e;
}

namespace {

// Placements in start order until `done` says the run has what it wants.
template <typename Done>
std::vector<Placement> run_placements(const Snapshot& s, Done&& done) {
  std::vector<Placement> out;
  Run run(s);
  std::int64_t t = s.now_ms;
  for (int step = 0; step < kMaxInstants && !done(out); ++step) {
    run.instant(t, [&](std::size_t, const Placement& p) {
      if (!done(out)) out.push_back(p);
    });
    if (run.exhausted()) break;  // the placements so far stand; the rest is past the work bound
    const auto next = run.next_after(t);
    if (!next || *next - s.now_ms > kHorizonMs) break;
    t = *next;
  }
  return out;
}

}  // namespace

std::vector<Placement> forecast(const Snapshot& s, int limit) {
  if (limit <= 0) return {};
  std::vector<Placement> out = run_placements(s, [&](const std::vector<Placement>& placed) { return static_cast<int>(placed.size()) >= limit; });
  for (auto& p : out) p.late_start_ms = p.start_ms;
  if (out.empty() || !has_spread(s)) return out;
  // The late run, until it placed every job of the first; a job it did not reach has no late start.
  std::map<std::string, Placement*> wanted;
  for (auto& p : out) wanted[p.job_id] = &p;
  std::set<std::string> found;
  const auto late = run_placements(late_ends(s), [&](const std::vector<Placement>& placed) {
    if (!placed.empty() && wanted.count(placed.back().job_id)) found.insert(placed.back().job_id);
    return found.size() == wanted.size();
  });
  for (auto& p : out) p.late_start_ms.reset();
  for (const auto& l : late)
    if (auto it = wanted.find(l.job_id); it != wanted.end()) it->second->late_start_ms = std::max(l.start_ms, it->second->start_ms);
  return out;
}

}  // namespace ojs::broker::estimate
