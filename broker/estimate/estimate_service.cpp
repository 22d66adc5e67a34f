// The start estimate, what-if and forecast over a snapshot read from the stores.
#include "broker/estimate/estimate_service.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "broker/preemption/preemption.hpp"
#include "broker/preemption/running_jobs.hpp"
#include "broker/scheduling/fair_order.hpp"
#include "broker/store/priority_score.hpp"
#include "ojs/core/error.hpp"
#include "ojs/core/job_states.hpp"
#include "ojs/ml/predicates.hpp"
#include "ojs/ml/requirement_class.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker {

using nlohmann::json;
using estimate::EndSource;

namespace {

OjsError no_such_job(const std::string& id) {
  return OjsError(ErrorCode::not_found, "job " + id + " not found", {{"job_id", id}});
}


// How long a waiting job will run: its declared duration (as far as the queue's jobs
// keep to theirs: `overruns`), else its timeout; the
// learned median is filled in later (EndSource::median needs the run-times read).
void declared_run(const JobRecord& job, const estimate::Overruns& overruns, estimate::Waiting& w) {
  if (const auto est = job.get_int("estimated_duration_s"); est && *est > 0) {
    w.run_ms = overruns.run(*est * 1000);
    w.late_run_ms = overruns.run(*est * 1000, estimate::kLateQuantile);
    w.run_source = EndSource::declared;
  } else if (const auto timeout = job.get_int("timeout_ms"); timeout && *timeout > 0) {
    w.run_ms = *timeout;
    w.run_source = EndSource::deadline;
  }
}

// A running job's reported progress as the PROGRESS extension keeps it in the job hash
// (progress, progress_updated_at, and the attempt's first report above 0: progress_base,
// progress_base_at); fraction 0 when it reported none. Resumed: a checkpoint saved
// before the attempt started (checkpoint.lua's last_checkpoint_at).
estimate::Progress reported_progress(const JobRecord& record) {
  const auto fraction = [&](const char* field) {
    try {
      if (record.has(field)) return std::stod(record.get(field));
    } catch (const std::exception&) {
    }
    return 0.0;
  };
  estimate::Progress p;
  p.fraction = fraction("progress");
  p.reported_ms = record.get_int("progress_updated_at").value_or(0);
  p.base_fraction = fraction("progress_base");
  p.base_ms = record.get_int("progress_base_at").value_or(0);
  const auto checkpoint = record.get_int("last_checkpoint_at"), started = record.get_int("started_at");
  // A checkpoint of the same millisecond as the start is the previous attempt's: this
  // one had not yet been handed to its worker.
  p.resumed = checkpoint && started && *checkpoint <= *started;
  return p;
}

// The changes a what-if body names, validated (400 naming the field).
struct Change {
  std::string kind;  // budget | worker | end_job | priority_class
  long long gpus = 0;
  std::string worker_id;
  ml::Capabilities caps;
  std::string job_id;
  int class_rank = 1;
  std::string class_name;
};

constexpr std::size_t kMaxChanges = 16;

std::vector<Change> parse_changes(const json& body) {
  if (!body.is_object()) throw invalid_field("body", "must be an object with `changes`");
  for (const auto& [key, value] : body.items())
    if (key != "changes") throw invalid_field(key, "is not a what-if member (only `changes`)");
  if (!body.contains("changes") || !body["changes"].is_array() || body["changes"].empty() || body["changes"].size() > kMaxChanges)
    throw invalid_field("changes", "must be an array of 1 to " + std::to_string(kMaxChanges) + " changes");
  std::vector<Change> out;
  int n = 0;
  for (const auto& c : body["changes"]) {
    const std::string at = "changes[" + std::to_string(n++) + "]";
    if (!c.is_object()) throw invalid_field(at, "must be an object with a `kind`");
    if (!c.contains("kind") || !c["kind"].is_string())
      throw invalid_field(at + ".kind", "must be one of budget, worker, end_job, priority_class");
    Change change;
    change.kind = c["kind"].get<std::string>();
    std::set<std::string> allowed = {"kind"};
    if (change.kind == "budget") {
      allowed.insert("gpus");
      if (!c.contains("gpus") || !c["gpus"].is_number_integer() || c["gpus"].get<long long>() < 1 || c["gpus"].get<long long>() > 100000)
        throw invalid_field(at + ".gpus", "must be an integer between 1 and 100000 (GPUs added to the queue's max_total_gpus)");
      change.gpus = c["gpus"].get<long long>();
    } else if (change.kind == "worker") {
      allowed.insert({"worker_id", "capabilities"});
      change.worker_id = "what-if-worker-" + std::to_string(n);
      if (c.contains("worker_id")) {
        if (!c["worker_id"].is_string() || c["worker_id"].get<std::string>().empty() || c["worker_id"].get<std::string>().size() > 256)
          throw invalid_field(at + ".worker_id", "must be a non-empty string of at most 256 characters");
        change.worker_id = c["worker_id"].get<std::string>();
      }
      if (!c.contains("capabilities")) throw invalid_field(at + ".capabilities", "must be an object, as a FETCH's capabilities");
      try {
        ml::require_bounded_capabilities(c["capabilities"], c["capabilities"].dump().size());
        change.caps = ml::parse_capabilities(c["capabilities"]);
      } catch (const OjsError& e) {
        const auto field = e.details().value("field", std::string("capabilities"));
        throw invalid_field(at + "." + field, e.details().value("rule", std::string(e.what())));
      }
    } else if (change.kind == "end_job") {
      allowed.insert("job_id");
      if (!c.contains("job_id") || !c["job_id"].is_string())
        throw invalid_field(at + ".job_id", "must be the id of a job running on a live worker of the queue");
      change.job_id = c["job_id"].get<std::string>();
    } else if (change.kind == "priority_class") {
      allowed.insert("priority_class");
      const auto value = c.value("priority_class", json());
      const std::string name = value.is_string() ? value.get<std::string>() : "";
      if (name != "spot" && name != "on-demand" && name != "reserved")
        throw invalid_field(at + ".priority_class", "must be one of spot, on-demand, reserved");
      change.class_name = name;
      change.class_rank = name == "spot" ? 0 : name == "on-demand" ? 1 : 2;
    } else {
      throw invalid_field(at + ".kind", "must be one of budget, worker, end_job, priority_class");
    }
    for (const auto& [key, value] : c.items())
      if (!allowed.count(key)) throw invalid_field(at + "." + key, "is not a member of a `" + change.kind + "` change");
    out.push_back(std::move(change));
  }
  return out;
}

// Takes a running job off every worker of the copy, giving back what it held; false when it runs on none.
bool end_now(estimate::Snapshot& s, const std::string& job_id) {
  bool found = false;
  for (auto& w : s.workers)
    for (auto it = w.running.begin(); it != w.running.end();) {
      if (it->job.job_id != job_id) {
        ++it;
        continue;
      }
      if (it->charged) {
        s.limits.budget.gpus_in_use -= it->job.gpus;
        s.limits.budget.tpu_chips_in_use -= it->tpu_chips;
        if (!it->tenant.empty()) s.limits.tenants.used[it->tenant] -= it->job.gpus;
        if (!found && it->job.gpus > 0) s.limits.budget.gpu_jobs -= 1;
      }
      found = true;
      it = w.running.erase(it);
    }
  return found;
}

}  // namespace

// Jobs whose run time is the learned median of their type, filled in once the run
// times are read: running jobs by (queue, type), waiting jobs by type.
struct EstimateService::MedianWanted {
  struct RunningAt {
    std::size_t worker, job;
    std::int64_t started_ms;
  };
  std::map<std::pair<std::string, std::string>, std::vector<RunningAt>> running;
  std::map<std::string, std::vector<std::size_t>> waiting;  // type -> waiting index
};

namespace {

// A running job of the snapshot with its expected end: declared (moved as the queue's
// jobs overran theirs), reported progress, the execution deadline, or the preemption's
// grace; false in `wants_median` when none of these gives it and the learned median must.
estimate::Running with_expected_end(RunningJob job, const JobRecord& record, const std::string& queue,
                                    const estimate::Overruns& overruns, std::int64_t now, bool& wants_median) {
  estimate::Running r;
  wants_median = false;
  r.charged = job.queue == queue;
  r.tenant = record.get("tenant");
  if (r.charged) r.tpu_chips = record.get_int("charged_tpu_chips").value_or(0);
  const auto started = record.get_int("started_at").value_or(now);
  // An expected end is never past the job's execution deadline (a deadline passed: due now).
  const auto within_deadline = [&](std::int64_t end) {
    const auto deadline = record.get_int("execution_deadline");
    return deadline ? std::min(end, std::max(*deadline, now)) : end;
  };
  const auto by_progress = estimate::progress_end(started, reported_progress(record), now);
  if (job.declared_end_ms) {
    const auto est = record.get_int("estimated_duration_s");
    r.source = est && *job.declared_end_ms == started + *est * 1000 ? EndSource::declared : EndSource::deadline;
    // A declared end moves as the queue's jobs overran theirs (but not past its deadline); past its end: due now.
    if (r.source == EndSource::declared && job.queue == queue) {
      job.declared_end_ms = within_deadline(overruns.end(started, *est * 1000, now));
      r.late_end_ms = within_deadline(overruns.end(started, *est * 1000, now, estimate::kLateQuantile));
    }
    job.declared_end_ms = std::max(*job.declared_end_ms, now);
  } else if (!record.has("preempt_deadline") && !by_progress) {
    wants_median = true;
  }
  // Reported progress, when it is to be trusted, beats the declared end (not past the deadline) and the median.
  if (by_progress && !record.has("preempt_deadline")) {
    job.declared_end_ms = within_deadline(*by_progress);
    r.late_end_ms.reset();  // its pace is measured, not learned from others
    r.source = EndSource::progress;
  }
  if (const auto deadline = record.get_int("preempt_deadline"); deadline && job.preempting &&
                                                                (!job.declared_end_ms || *job.declared_end_ms > *deadline)) {
    job.declared_end_ms = std::max(*deadline, now);  // being preempted: gone by its grace period's end
    r.late_end_ms.reset();
    r.source = EndSource::preempted;
  }
  r.job = std::move(job);
  return r;
}

}  // namespace

EstimateService::Read EstimateService::read(const std::string& queue, int limit, const JobRecord* target) {
  Read out;
  auto& s = out.snapshot;
  s.now_ms = now_ms();
  s.assignment = assignment_options(config_);
  s.scoring.locality_delay_ms = config_.locality_delay_ms;
  s.capacity_hold_ms = config_.capacity_hold_ms;
  out.paused = queues_.is_paused(queue);
  const auto classes = queues_.load_classes(queue);

  // The queue's budget and tenant quotas, as claim.lua compares them.
  const auto budget = configs_.budget(queue);
  s.limits.budget = queue_budget(budget.use);
  s.limits.budget.max_gpu_mem_mb.reset();  // the estimate leaves the GPU-memory budget out (docs/matching.md)
  // A cohort member that lent part of its share gets it back for its waiting jobs: the
  // controller raises the share to the nominal one as the borrowers it preempts leave
  // (their ends are their grace periods'), so the run plans with the nominal share.
  if (budget.use.cohort_gpus && budget.use.nominal_gpus)
    s.limits.budget.max_gpus = std::max(*budget.use.cohort_gpus, *budget.use.nominal_gpus);
  s.limits.tenants.limits = budget.tenant_max_gpus;
  s.limits.tenants.used = budget.tenant_gpus_in_use;

  // Under policy fair, the tenants' shares the claim orders by (either order).
  const auto fair_usage = marks_.fair_usage(queue);
  s.fair = fair_shares_of(fair_usage, true);
  if (fair_usage) s.fair_layout_json = fair_usage->fair.layout_json;

  // How the queue's jobs kept to their declared durations (Overruns: the ends of jobs that declare one).
  auto completed = reads_.completed_runs(queue, estimate::kOverrunsKept);
  const auto overruns = estimate::Overruns::of(std::move(completed.ran_vs_declared));
  std::vector<double> started_vs_late;
  for (const auto& t : completed.told)
    if (const auto ratio = estimate::started_vs_late(t.asked_ms, t.late_ms, t.started_ms)) started_vs_late.push_back(*ratio);
  out.calibration = estimate::LateCalibration::of(std::move(started_vs_late));

  MedianWanted medians;
  read_waiting(queue, classes, limit, target, overruns, s, medians);
  read_workers(queue, classes, overruns, s, medians);
  read_holds(queue, s);
  read_medians(queue, medians, s);
  return out;
}

void EstimateService::read_waiting(const std::string& queue, const ClassSet& classes, int limit, const JobRecord* target,
                                   const estimate::Overruns& overruns, estimate::Snapshot& s, MedianWanted& medians) {
  bool more = false;
  const auto entries = reads_.ready_jobs(queue, classes, limit, &more);
  s.truncated = more;
  std::vector<std::string> ids;
  for (const auto& e : entries) ids.push_back(e.id);
  auto fields = reads_.waiting_fields(queue, ids);
  auto add_waiting = [&](const JobRecord& job, const std::string& class_id, double score) {
    const auto cls = classes.classes.find(class_id);
    if (cls == classes.classes.end()) return;
    estimate::Waiting w;
    w.id = job.id();
    w.class_id = class_id;
    w.req = &scheduler_.requirements(class_id, cls->second);
    w.score = score;
    w.tenant = job.get("tenant");
    w.enqueued_ms = job.get_int("enqueued_at").value_or(s.now_ms);
    w.class_rank = class_rank_of_ready_score(score).value_or(job.priority_class_rank());  // as the controller ranks a head
    declared_run(job, overruns, w);
    if (!w.run_ms) medians.waiting[job.get("type")].push_back(s.waiting.size());
    s.waiting.push_back(std::move(w));
  };
  for (std::size_t i = 0; i < entries.size(); ++i)
    if (fields[i]) add_waiting(*fields[i], entries[i].class_id, entries[i].score);
  const bool read_target = target && std::any_of(s.waiting.begin(), s.waiting.end(),
                                                [&](const estimate::Waiting& w) { return w.id == target->id(); });
  if (target && !read_target) {  // not ready (scheduled, a retry) or beyond what was read: after those read
    const double last = s.waiting.empty() ? 0 : s.waiting.back().score;
    add_waiting(*target, target->get("class"), last + 1);
    if (!s.waiting.empty() && s.waiting.back().id == target->id())
      s.waiting.back().due_ms = std::max({s.now_ms, target->get_int("next_attempt_at").value_or(0),
                                          target->get_int("scheduled_at").value_or(0)});
  }
}

void EstimateService::read_workers(const std::string& queue, const ClassSet& classes, const estimate::Overruns& overruns,
                                   estimate::Snapshot& s, MedianWanted& medians) {
  // What runs is read (round trips per worker) only where it matters: on workers whose
  // hardware fits one of the waiting classes; the others take part only to say why a
  // job is unresolvable.
  std::set<std::string> waiting_classes;
  for (const auto& w : s.waiting) waiting_classes.insert(w.class_id);
  for (auto& live : live_workers(workers_, s.now_ms, config_.worker_dead_after_ms)) {
    if (!live.serves(queue)) continue;
    const bool fits_one = std::any_of(waiting_classes.begin(), waiting_classes.end(), [&](const std::string& c) {
      return ml::fits_static(scheduler_.requirements(c, classes.classes.at(c)), &live.caps);
    });
    estimate::Worker w{live.info.id, std::move(live.caps), {}, live.info.drained_devices};
    if (!fits_one) {
      s.workers.push_back(std::move(w));
      continue;
    }
    for (auto& [job, record] : running_records_on(jobs_, workers_, w.id, s.now_ms)) {
      const auto started = record.get_int("started_at").value_or(s.now_ms);
      const auto type = record.get("type");
      const auto job_queue = job.queue;
      bool wants_median = false;
      w.running.push_back(with_expected_end(std::move(job), record, queue, overruns, s.now_ms, wants_median));
      if (wants_median) medians.running[{job_queue, type}].push_back({s.workers.size(), w.running.size() - 1, started});
    }
    s.workers.push_back(std::move(w));
  }
}

void EstimateService::read_holds(const std::string& queue, estimate::Snapshot& s) {
  for (const auto& [worker, text] : marks_.holds()) {
    const auto h = CapacityHold::parse(worker, text);
    if (!h || h->until_ms <= s.now_ms) continue;
    std::vector<std::string> victims;
    for (const auto& v : h->victims) victims.push_back(v.job_id);
    s.holds.push_back({h->worker_id, h->for_job, h->queue == queue ? h->class_id : std::string(), h->until_ms, std::move(victims),
                       h->backfill_start_ms > 0});
  }
}

void EstimateService::read_medians(const std::string& queue, const MedianWanted& medians, estimate::Snapshot& s) {
  std::map<std::string, std::set<std::string>> types;  // one read per queue
  for (const auto& [key, at] : medians.running) types[key.first].insert(key.second);
  for (const auto& [type, at] : medians.waiting) types[queue].insert(type);
  for (const auto& [q, wanted] : types) {
    auto times = reads_.run_times(q, {wanted.begin(), wanted.end()});
    for (auto& [type, list] : times) {
      if (list.empty()) continue;
      std::sort(list.begin(), list.end());
      // The run's run time (the median) and its late one, of the type's learned times.
      const std::int64_t median = estimate::at_quantile(list, 0.5), late = estimate::at_quantile(list, estimate::kLateQuantile);
      if (auto it = medians.running.find({q, type}); it != medians.running.end())
        for (const auto& m : it->second) {
          auto& r = s.workers[m.worker].running[m.job];
          r.source = EndSource::median;
          r.job.declared_end_ms = std::max(s.now_ms, m.started_ms + median);  // past it: due now
          r.late_end_ms = std::max(s.now_ms, m.started_ms + late);
        }
      if (q == queue)
        if (auto it = medians.waiting.find(type); it != medians.waiting.end())
          for (std::size_t i : it->second) {
            s.waiting[i].run_ms = median;
            s.waiting[i].late_run_ms = late;
            s.waiting[i].run_source = EndSource::median;
          }
    }
  }
}

json EstimateService::estimate_of(const JobRecord& job, Read* out, estimate::Estimate* result, int* run_ahead) {
  const auto& queue = job.queue();
  const auto score = job.state() == "available" ? reads_.ready_score(queue, job.get("class"), job.id()) : std::nullopt;
  Read r = read(queue, kMaxWaiting, &job);  // the jobs behind it in the window take part too
  const auto classes = queues_.load_classes(queue);
  r.ahead_total = score ? reads_.ready_below(queue, classes, *score) : static_cast<long long>(r.snapshot.waiting.size()) - 1;
  estimate::Estimate e = estimate::estimate_range(r.snapshot, job.id());
  if (e.late_start_ms) {
    // The first estimate of a waiting job is kept on it: how late it then starts calibrates later ones.
    if (!job.has("estimate_asked_at")) reads_.note_estimate(queue, job.id(), r.snapshot.now_ms, *e.late_start_ms);
    e.late_start_ms = r.calibration.widen(r.snapshot.now_ms, *e.late_start_ms);
  }
  if (run_ahead) *run_ahead = e.jobs_ahead;  // of the jobs the run saw
  e.jobs_ahead = static_cast<int>(std::max<long long>(r.ahead_total, e.jobs_ahead));
  e.position = e.jobs_ahead + 1;
  if (r.paused && e.status == estimate::Estimate::Status::estimated) {
    e.status = estimate::Estimate::Status::unknown;
    e.reason = "the queue is paused: nothing starts until it is resumed";
  }
  if (job.get("class") == ml::kDefaultClassId && r.snapshot.workers.empty() && e.status != estimate::Estimate::Status::estimated) {
    e.status = estimate::Estimate::Status::unknown;  // a plain OJS job: any worker takes it, even one without capabilities
    e.reason = "no live worker that advertises capabilities serves the queue; workers without them are not planned for";
  }
  if (out) *out = std::move(r);
  if (result) *result = e;
  return estimate::to_json(e, now_ms());
}

json EstimateService::for_job(const std::string& id) {
  const auto record = jobs_.get(id);
  if (!record) throw no_such_job(id);
  const auto& state = record->state();
  if (state == "active") {
    json j = {{"status", "started"}};
    if (const auto at = record->get_int("started_at")) j["started_at"] = format_rfc3339(*at);
    return j;
  }
  if (state == "pending")
    return {{"status", "unknown"}, {"reason", "held by an operator: it starts only after it is released"}};
  if (!waits_for_worker(state)) return {{"status", "not_waiting"}, {"state", state}};
  return estimate_of(*record, nullptr, nullptr, nullptr);
}

json EstimateService::what_if(const std::string& id, const json& body, const std::function<bool(const std::string&)>& visible) {
  const auto changes = parse_changes(body);
  const auto record = jobs_.get(id);
  if (!record) throw no_such_job(id);
  if (!waits_for_worker(record->state()))
    throw OjsError(ErrorCode::conflict, "job " + id + " is not waiting (state '" + record->state() + "'): a what-if asks about a waiting job",
                   {{"job_id", id}, {"state", record->state()}});
  Read r;
  estimate::Estimate before;
  int before_run_ahead = 0;
  const json before_json = estimate_of(*record, &r, &before, &before_run_ahead);

  estimate::Snapshot copy = r.snapshot;
  std::vector<std::string> notes;  // why a change may do nothing
  for (std::size_t i = 0; i < changes.size(); ++i) {
    const auto& c = changes[i];
    const std::string at = "changes[" + std::to_string(i) + "]";
    if (c.kind == "budget") {
      if (copy.limits.budget.max_gpus) *copy.limits.budget.max_gpus += c.gpus;
      else notes.push_back("the queue has no max_total_gpus to raise");
    } else if (c.kind == "worker") {
      copy.workers.push_back({c.worker_id, c.caps, {}, {}});
    } else if (c.kind == "end_job") {
      if ((visible && !visible(c.job_id)) || !end_now(copy, c.job_id)) throw invalid_field(at + ".job_id", "must be the id of a job running on a live worker of the queue");
    } else if (c.kind == "priority_class") {
      auto it = std::find_if(copy.waiting.begin(), copy.waiting.end(), [&](const estimate::Waiting& w) { return w.id == id; });
      const auto rank = class_rank_of_ready_score(it->score);
      const auto fair_base = fair_base_for_class(it->score, c.class_rank);  // fair: the class band first, as escalation moves it
      const int current = record->priority_class_rank();
      if (!rank && !fair_base) {
        notes.push_back("the queue's policy does not order jobs by priority class");
      } else if (c.class_rank <= current) {
        notes.push_back("the job's priority class is already " + c.class_name + " or higher");
      } else {
        if (rank) it->score -= static_cast<double>((c.class_rank - current) * kPrioritiesPerClass) * kScoreBand;
        else it->score = *fair_base + static_cast<double>(unpack_score(it->score).seq);
        it->class_rank = c.class_rank;  // it may now preempt lower classes, as the controller would let it
        std::stable_sort(copy.waiting.begin(), copy.waiting.end(),
                         [](const estimate::Waiting& a, const estimate::Waiting& b) { return a.score < b.score; });
      }
    }
  }
  estimate::Estimate after = estimate::estimate_range(copy, id);
  if (after.late_start_ms) after.late_start_ms = r.calibration.widen(copy.now_ms, *after.late_start_ms);
  after.jobs_ahead = static_cast<int>(std::max<long long>(0, after.jobs_ahead + (before.jobs_ahead - before_run_ahead)));
  after.position = after.jobs_ahead + 1;
  const auto now = now_ms();
  using Status = estimate::Estimate::Status;
  const bool started = after.status == Status::estimated;
  const bool helps = started && (before.status != Status::estimated || after.start_ms < before.start_ms);
  json w = {{"job_id", id}, {"changes", body["changes"]}, {"before", before_json}, {"after", estimate::to_json(after, now)},
            {"placed_now", started && after.start_ms <= now}, {"helps", helps}};
  w["worker_ids"] = started ? json(after.worker_ids) : json::array();
  if (!helps) {
    std::string why;
    if (after.status == Status::unresolvable) why = "it still could never run: " + after.reason;
    else if (!started) why = "its start still cannot be estimated: " + after.reason;
    else why = "it would still start at " + format_rfc3339(after.start_ms) + ", resting on " + estimate::rests_on(after);
    for (const auto& n : notes) why += "; " + n;
    w["why_not"] = why;
  }
  return {{"what_if", w}};
}

json EstimateService::forecast(const std::string& queue, int limit) {
  Read r = read(queue, kMaxWaiting, nullptr);
  json placements = json::array();
  if (!r.paused)
    for (auto p : estimate::forecast(r.snapshot, limit)) {
      if (p.late_start_ms) p.late_start_ms = r.calibration.widen(r.snapshot.now_ms, *p.late_start_ms);
      placements.push_back(estimate::to_json(p));
    }
  json f = {{"queue", queue}, {"at", format_rfc3339(r.snapshot.now_ms)}, {"placements", placements},
            {"waiting_read", r.snapshot.waiting.size()}, {"workers", r.snapshot.workers.size()}};
  if (r.paused) f["message"] = "the queue is paused: nothing starts until it is resumed";
  if (r.snapshot.truncated) f["truncated"] = true;
  return {{"forecast", f}};
}

}  // namespace ojs::broker
