// [estimate] Placement run forward in time over a copy of the queue's state (pure).
#include "broker/estimate/forecast.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <functional>
#include <set>

#include "ojs/core/time.hpp"
#include "ojs/ml/predicates.hpp"

namespace ojs::broker::estimate {

using nlohmann::json;

namespace {

// Past a year of simulated time an estimate says nothing useful: the run stops.
constexpr std::int64_t kHorizonMs = 366LL * 24 * 3600 * 1000;
// A bound on the instants one run visits (each ends a job or makes one due): a queue
// of the snapshot's size (the service reads at most kMaxWaiting) needs far fewer.
constexpr int kMaxInstants = 50000;

// The tenant quota that keeps `gpus` more GPUs from `tenant`, if one does (_lib.lua tenant_block).
bool over_tenant_quota(const Limits& l, const std::string& tenant, long long gpus) {
  if (gpus <= 0 || tenant.empty()) return false;
  auto it = l.tenant_max.find(tenant);
  if (it == l.tenant_max.end()) it = l.tenant_max.find("*");
  if (it == l.tenant_max.end()) return false;
  const auto used = l.tenant_in_use.count(tenant) ? l.tenant_in_use.at(tenant) : 0;
  return used + gpus > it->second;
}

std::optional<long long> tenant_limit(const Limits& l, const std::string& tenant) {
  if (tenant.empty()) return std::nullopt;
  auto it = l.tenant_max.find(tenant);
  if (it == l.tenant_max.end()) it = l.tenant_max.find("*");
  if (it == l.tenant_max.end()) return std::nullopt;
  return it->second;
}

int members_of(const ml::Requirements& req) { return std::max(1, req.hard.gang.size); }

// When a job preferring a model may take a worker without it (0: it prefers none).
std::int64_t locality_hold_end(const Waiting& job, const ml::ScoringOptions& scoring) {
  return job.req->soft.locality_model_id.empty() ? 0 : job.enqueued_ms + scoring.locality_delay_ms;
}

// One forward run over a copy of the snapshot.
class Run {
 public:
  explicit Run(const Snapshot& s) : s_(s), workers_(s.workers), limits_(s.limits), placed_(s.waiting.size(), false),
                                    loads_(s.workers.size()), seen_(s.waiting.size(), false) {
    for (const auto& w : workers_)
      for (const auto& r : w.running) initial_.insert(r.job.job_id);
    // A forming gang holds workers again at each instant, so which are free for the
    // others can change without a load that drops: with one waiting, every worker is looked at.
    gangs_ = std::any_of(s.waiting.begin(), s.waiting.end(), [](const Waiting& w) { return w.req->hard.gang.size > 0; });
  }

  // What kept job `i` from a start at the last instant (only recorded for `watch_`).
  std::size_t watch_ = static_cast<std::size_t>(-1);
  std::set<std::string> kept_by_;
  // Initial running jobs the run ended: per worker, and those charged to the queue.
  std::vector<std::vector<std::pair<std::string, EndSource>>> ended_on_ = {};
  std::vector<std::pair<std::string, EndSource>> ended_charged_;

  // One instant: the jobs ended by `t` leave, then the waiting jobs take what fits.
  void instant(std::int64_t t, const std::function<void(std::size_t, const Placement&)>& placed) {
    release(t);
    place(t, placed);
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
    for (std::size_t i = 0; i < s_.waiting.size(); ++i)
      if (!placed_[i]) {
        consider(s_.waiting[i].due_ms);
        consider(locality_hold_end(s_.waiting[i], s_.scoring));
      }
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
          all_dirty_ = true;  // the budget or a quota has room again: any worker may now do
          limits_.budget.gpus_in_use -= it->job.gpus;
          if (it->job.gpus > 0 && freed_jobs.insert(it->job.job_id).second) limits_.budget.gpu_jobs -= 1;
          if (!it->tenant.empty()) limits_.tenant_in_use[it->tenant] -= it->job.gpus;
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

  void note(std::size_t i, const std::string& what) {
    if (i == watch_) kept_by_.insert(what);
  }

  void place(std::int64_t t, const std::function<void(std::size_t, const Placement&)>& placed) {
    if (ended_on_.size() != workers_.size()) ended_on_.resize(workers_.size());
    std::set<std::size_t> held;         // workers a forming gang holds at this instant
    std::set<std::string> full_classes; // classes no free worker fits at this instant (placing only adds load)
    // Only the workers something left since the last instant can take a job that did not
    // fit then (the others only gained load), unless the budget freed, a gang waits, or
    // the job just became due: then every worker is looked at.
    const bool all = all_dirty_ || gangs_;
    const std::set<std::size_t> dirty = std::move(dirty_);
    dirty_.clear();
    all_dirty_ = false;
    for (std::size_t i = 0; i < s_.waiting.size(); ++i) {
      if (placed_[i] || s_.waiting[i].due_ms > t) continue;
      const Waiting& job = s_.waiting[i];
      const bool every_worker = all || job.due_ms == t || locality_hold_end(job, s_.scoring) == t || !seen_[i];
      seen_[i] = true;
      const ml::Requirements& req = *job.req;
      const int members = members_of(req);
      const long long gpus = static_cast<long long>(req.gpu_count()) * members;
      if (gpus > 0) {
        if (const auto limit = limits_.budget.blocking({gpus, 1, 0})) { note(i, *limit); continue; }
        if (over_tenant_quota(limits_, job.tenant, gpus)) { note(i, "tenant_quota"); continue; }
      }
      if (members == 1 && full_classes.count(job.class_id)) {
        if (i == watch_) note_busy(i, held);
        continue;
      }
      // Workers that fit one member now, with the devices each would get.
      std::vector<std::pair<std::size_t, std::vector<int>>> fit;
      bool locality_held = false;  // a worker fits but lacks the model the job waits for
      for (std::size_t w = 0; w < workers_.size(); ++w) {
        if (!every_worker && !dirty.count(w)) continue;
        if (held.count(w) || !fits_static(job, w)) continue;
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
        } else if (locality_held) {
          note(i, "locality_hold");
        } else {
          full_classes.insert(job.class_id);
          if (i == watch_) note_busy(i, held);
        }
        continue;
      }
      Placement p{job.id, job.tenant, {}, t, std::nullopt};
      if (job.run_ms) p.end_ms = t + *job.run_ms;
      for (const auto& [w, devices] : *chosen) {
        Running r;
        r.job.job_id = job.id;
        r.job.gpus = req.gpu_count();
        r.job.devices = devices;
        r.job.declared_end_ms = p.end_ms;
        r.source = job.run_source;
        r.charged = true;
        r.tenant = job.tenant;
        workers_[w].running.push_back(std::move(r));
        loads_[w].reset();
        p.worker_ids.push_back(workers_[w].id);
      }
      if (gpus > 0) {
        limits_.budget.gpus_in_use += gpus;
        limits_.budget.gpu_jobs += 1;
        if (!job.tenant.empty()) limits_.tenant_in_use[job.tenant] += gpus;
      }
      placed_[i] = true;
      placed(i, p);
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
    const Waiting& job = s_.waiting[i];
    for (std::size_t w : held)
      if (fits_static(job, w) && ml::fits(*job.req, &workers_[w].caps, load(w), s_.assignment)) {
        note(i, "gang_forming");
        return;
      }
    note(i, "busy");
  }

  const Snapshot& s_;
  std::vector<Worker> workers_;
  Limits limits_;
  std::vector<bool> placed_;
  std::vector<std::optional<ml::WorkerLoad>> loads_;
  std::map<std::pair<std::string, std::size_t>, bool> static_fit_;
  std::set<std::string> initial_;
  std::set<std::size_t> dirty_;      // workers a job left since the last placement pass
  bool all_dirty_ = true;            // look at every worker at the next pass
  bool gangs_ = false;               // a gang waits
  std::vector<bool> seen_;           // waiting jobs looked at in a pass already
};

// Why no worker of the fleet could ever take `req` (nullopt: some could).
std::optional<std::string> never_fits(const Snapshot& s, const Waiting& job) {
  const ml::Requirements& req = *job.req;
  const int members = members_of(req);
  const long long gpus = static_cast<long long>(req.gpu_count()) * members;
  const auto& b = s.limits.budget;
  if (gpus > 0 && b.max_gpus && gpus > *b.max_gpus)
    return "it needs " + std::to_string(gpus) + " GPUs and the queue's max_total_gpus is " + std::to_string(*b.max_gpus);
  if (const auto limit = tenant_limit(s.limits, job.tenant); gpus > 0 && limit && gpus > *limit)
    return "it needs " + std::to_string(gpus) + " GPUs and tenant " + job.tenant + "'s quota is " + std::to_string(*limit);
  if (s.workers.empty()) return "no live worker serves the queue";
  int fitting = 0;
  std::set<std::string> why;
  for (const auto& w : s.workers) {
    const auto j = ml::judge_static(req, &w.caps);
    if (j.eligible()) {
      ++fitting;
    } else if (why.size() < 3) {
      why.insert(j.refusals.front().summary.empty() ? j.refusals.front().reason : j.refusals.front().summary);
    }
  }
  if (fitting >= members) return std::nullopt;
  std::string text = "no live worker serving the queue could ever take it (" + std::to_string(s.workers.size()) + " seen";
  if (members > 1) text += ", " + std::to_string(fitting) + " fit a member of a gang of " + std::to_string(members);
  for (const auto& w : why) text += "; " + w;
  return text + ")";
}

}  // namespace

const char* to_string(EndSource source) {
  switch (source) {
    case EndSource::declared: return "declared";
    case EndSource::deadline: return "deadline";
    case EndSource::median: return "median";
    case EndSource::unknown: break;
  }
  return "unknown";
}

Estimate estimate_start(const Snapshot& s, const std::string& target) {
  Estimate e;
  e.truncated = s.truncated;
  const auto at = std::find_if(s.waiting.begin(), s.waiting.end(), [&](const Waiting& w) { return w.id == target; });
  if (at == s.waiting.end()) {
    e.reason = "the job is not among the queue's waiting jobs";
    return e;
  }
  const auto index = static_cast<std::size_t>(at - s.waiting.begin());
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
  // The ends it rests on: the running jobs that left the workers it starts on, and
  // those that gave back the budget or quota when that is what kept it.
  std::map<std::string, EndSource> ends;
  for (std::size_t w = 0; w < s.workers.size() && w < run.ended_on_.size(); ++w)
    if (std::find(e.worker_ids.begin(), e.worker_ids.end(), s.workers[w].id) != e.worker_ids.end())
      for (const auto& [id, source] : run.ended_on_[w]) ends.emplace(id, source);
  const bool kept_by_limits = std::any_of(e.kept_by.begin(), e.kept_by.end(), [](const std::string& k) {
    return k == "max_total_gpus" || k == "max_concurrent_gpu_jobs" || k == "tenant_quota";
  });
  if (kept_by_limits)
    for (const auto& [id, source] : run.ended_charged_) ends.emplace(id, source);
  for (const auto& [id, source] : ends) ++e.running_ends[source];
  return e;
}

std::vector<Placement> forecast(const Snapshot& s, int limit) {
  std::vector<Placement> out;
  if (limit <= 0) return out;
  Run run(s);
  std::int64_t t = s.now_ms;
  for (int step = 0; step < kMaxInstants && static_cast<int>(out.size()) < limit; ++step) {
    run.instant(t, [&](std::size_t, const Placement& p) {
      if (static_cast<int>(out.size()) < limit) out.push_back(p);
    });
    const auto next = run.next_after(t);
    if (!next || *next - s.now_ms > kHorizonMs) break;
    t = *next;
  }
  return out;
}

std::string rests_on(const Estimate& e) {
  std::vector<std::string> parts;
  auto count = [&](EndSource source) { return e.running_ends.count(source) ? e.running_ends.at(source) : 0; };
  auto plural = [](int n, const std::string& one, const std::string& many) { return std::to_string(n) + " " + (n == 1 ? one : many); };
  if (int n = count(EndSource::declared)) parts.push_back(plural(n, "running job's declared end", "running jobs' declared ends"));
  if (int n = count(EndSource::deadline)) parts.push_back(plural(n, "running job's execution deadline", "running jobs' execution deadlines"));
  if (int n = count(EndSource::median))
    parts.push_back(plural(n, "running job's learned run time (its type's median)", "running jobs' learned run times (their type's median)"));
  parts.push_back(plural(e.jobs_ahead, "job ahead", "jobs ahead"));
  for (const auto& k : e.kept_by) {
    if (k == "max_total_gpus" || k == "max_concurrent_gpu_jobs") parts.push_back("the queue budget (" + k + ")");
    else if (k == "tenant_quota") parts.push_back("the tenant's GPU quota");
    else if (k == "gang_forming") parts.push_back("a forming gang holding workers");
    else if (k == "locality_hold") parts.push_back("the locality delay (it waits for a worker with its model)");
  }
  if (e.truncated) parts.push_back("only the first jobs of the queue were read");
  std::string text;
  for (const auto& p : parts) text += (text.empty() ? "" : "; ") + p;
  return text;
}

json to_json(const Estimate& e, std::int64_t now_ms) {
  json j;
  switch (e.status) {
    case Estimate::Status::estimated: j["status"] = "estimated"; break;
    case Estimate::Status::unresolvable: j["status"] = "unresolvable"; break;
    case Estimate::Status::unknown: j["status"] = "unknown"; break;
  }
  j["position"] = e.position;
  j["jobs_ahead"] = e.jobs_ahead;
  if (e.status == Estimate::Status::estimated) {
    j["start_at"] = format_rfc3339(e.start_ms);
    j["start_in_s"] = std::max<std::int64_t>(0, (e.start_ms - now_ms + 999) / 1000);
    j["worker_ids"] = e.worker_ids;
    j["placed_ahead"] = e.placed_ahead;
    json ends = json::object();
    for (auto source : {EndSource::declared, EndSource::deadline, EndSource::median})
      ends[to_string(source)] = e.running_ends.count(source) ? e.running_ends.at(source) : 0;
    j["running_ends"] = ends;
    j["rests_on"] = rests_on(e);
  } else {
    j["reason"] = e.reason;
  }
  j["kept_by"] = e.kept_by;
  if (e.truncated) j["truncated"] = true;
  return j;
}

json to_json(const Placement& p) {
  json j = {{"job_id", p.job_id}, {"worker_ids", p.worker_ids}, {"start_at", format_rfc3339(p.start_ms)}};
  if (!p.tenant.empty()) j["tenant"] = p.tenant;
  j["end_at"] = p.end_ms ? json(format_rfc3339(*p.end_ms)) : json(nullptr);
  return j;
}

}  // namespace ojs::broker::estimate
