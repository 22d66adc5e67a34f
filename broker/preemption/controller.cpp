// The preemption controller. Decisions (escalation, reservation timeouts,
// choosing and marking victims) are taken by one broker at a time, the holder
// of a Redis lease; reclaiming jobs whose preemption deadline passed is
// idempotent (fail.lua compare-and-set) and done by every broker.
#include <spdlog/spdlog.h>

#include "broker/preemption/preemption.hpp"
#include "ojs/core/time.hpp"
#include "ojs/core/uuid.hpp"
#include "ojs/ml/requirements.hpp"

namespace ojs::broker {

using nlohmann::json;

namespace {

// Refusals that preemption can cure: capacity in use by jobs on the worker.
bool dynamic_only(const ml::Judgement& j) {
  for (const auto& r : j.refusals)
    if (r.predicate != "free_gpus" && r.predicate != "anti_affinity" && r.predicate != "capacity_hold" &&
        r.predicate != "budget")
      return false;
  return true;
}

int target_rank(const ml::Scheduling& s, int from) {
  if (s.escalation_target_class) {
    switch (*s.escalation_target_class) {
      case ml::PriorityClass::spot: return 0;
      case ml::PriorityClass::reserved: return 2;
      default: return 1;
    }
  }
  return std::min(2, from + 1);
}

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
  r.class_rank = class_rank_of_score(static_cast<double>(job.get_int("rank_base").value_or(0)));
  r.preempting = job.has("preempt_deadline");
  if (auto req = requirements_of(job)) {
    r.preemptible = req->scheduling.preemptible;
    r.grace_period_s = req->scheduling.grace_period_s;
    r.checkpoint_on_preempt = req->scheduling.checkpoint.on_preempt;
  }
  const auto since = std::max(job.get_int("started_at").value_or(now), job.get_int("last_checkpoint_at").value_or(0));
  r.lost_ms = std::max<std::int64_t>(0, now - since);
  return r;
}

}  // namespace

PreemptionController::PreemptionController(JobService& jobs, Scheduler& scheduler, DiagnosisLog& diagnosis,
                                           WorkerRegistry& workers, const BrokerConfig& config)
    : jobs_(jobs), scheduler_(scheduler), diagnosis_(diagnosis), workers_(workers), config_(config), owner_(make_uuidv7()) {}

bool PreemptionController::renew_lease() {
  const auto ttl = std::max<std::int64_t>(3 * config_.preemption_interval_ms, 2000);
  const bool leading = jobs_.store().preemption().hold_lease(owner_, ttl);
  if (leading != leading_) spdlog::info("preemption controller: {} the leader lease", leading ? "took" : "lost");
  leading_ = leading;
  return leading;
}

void PreemptionController::run_once() {
  auto& store = jobs_.store();
  const auto queues = store.queues();
  for (const auto& queue : queues)
    if (int n = reclaim_overdue(queue); n > 0)
      spdlog::warn("queue {}: moved back {} preempted job(s) whose worker did not release them by the deadline", queue, n);
  const auto now = now_ms();
  if (now < next_tick_ms_) return;
  next_tick_ms_ = now + config_.preemption_interval_ms;
  if (!renew_lease()) return;
  for (const auto& queue : queues) {
    escalate(queue);
    expire_reservation_waits(queue);
  }
  preempt();
}

int PreemptionController::reclaim_overdue(const std::string& queue) {
  auto marks = jobs_.store().preemption();
  int moved = 0;
  for (const auto& id : marks.due(queue, PreemptionStore::Index::preempting, now_ms())) {
    auto job = jobs_.store().get(queue, id);
    if (!job || job->state() != "active" || !job->has("preempt_deadline")) {
      marks.drop(queue, PreemptionStore::Index::preempting, id);
      continue;
    }
    const json error = {{"code", "preempted"},
                        {"message", "worker " + job->get("worker_id") + " did not release the job within its preemption grace period"},
                        {"retryable", true}};
    try {
      jobs_.fail(id, error, /*requeue=*/true);
      ++moved;
    } catch (const std::exception& e) {
      spdlog::debug("preempted job {} not reclaimed: {}", id, e.what());
    }
  }
  return moved;
}

int PreemptionController::escalate(const std::string& queue) {
  auto& store = jobs_.store();
  auto indexes = store.preemption();
  int n = 0;
  for (const auto& id : indexes.due(queue, PreemptionStore::Index::escalations, now_ms())) {
    auto job = store.get(queue, id);
    auto req = job ? requirements_of(*job) : std::nullopt;
    const bool waiting = job && (job->state() == "available" || job->state() == "scheduled" || job->state() == "retryable");
    const int from = job ? class_rank_of_score(static_cast<double>(job->get_int("rank_base").value_or(0))) : 0;
    const int to = req ? target_rank(req->scheduling, from) : 0;
    if (!req || !waiting || from >= to) {
      indexes.drop(queue, PreemptionStore::Index::escalations, id);
      continue;
    }
    const auto priority = static_cast<int>(job->get_int("priority").value_or(0));
    if (indexes.escalate(*job, rank_base(to, priority), from, to)) {
      ++n;
      spdlog::info("queue {}: job {} escalated after waiting {} s", queue, id, req->scheduling.escalation_after_s.value_or(0));
    }
  }
  return n;
}

int PreemptionController::expire_reservation_waits(const std::string& queue) {
  auto& store = jobs_.store();
  auto indexes = store.preemption();
  const auto now = now_ms();
  auto ids = indexes.due(queue, PreemptionStore::Index::reservation_waits, now);
  if (ids.empty()) return 0;
  const auto reservations = load_reservations(indexes);
  int n = 0;
  for (const auto& id : ids) {
    auto job = store.get(queue, id);
    auto req = job ? requirements_of(*job) : std::nullopt;
    if (!req) {
      indexes.drop(queue, PreemptionStore::Index::reservation_waits, id);
      continue;
    }
    const auto& name = req->scheduling.reservation_id;
    auto it = reservations.find(name);
    if (it != reservations.end() && it->second.active(now)) {  // the reservation exists: keep waiting inside it
      indexes.drop(queue, PreemptionStore::Index::reservation_waits, id);
      continue;
    }
    const json error = {{"code", "reservation_unavailable"},
                        {"type", "reservation_unavailable"},
                        {"message", "reservation " + name + " does not exist or has expired; the job waited its ext_ml_reservation_timeout_s (" +
                                        std::to_string(req->scheduling.reservation_timeout_s.value_or(0)) + " s)"},
                        {"retryable", false},
                        {"occurred_at", format_rfc3339(now)}};
    if (indexes.discard_waiting(*job, error.dump()).status == TransitionStatus::ok) ++n;
  }
  return n;
}

std::vector<RunningJob> PreemptionController::running_on(const std::string& worker_id) {
  std::vector<RunningJob> out;
  const auto held = workers_.held_jobs(worker_id);
  if (held.empty()) return out;
  std::vector<std::pair<std::string, std::string>> wanted;
  for (const auto& h : held) wanted.emplace_back(h.queue, h.job_id);
  const auto jobs = jobs_.store().get_many(wanted);
  const auto now = now_ms();
  for (std::size_t i = 0; i < held.size(); ++i) {
    if (!jobs[i]) continue;
    const JobRecord& job = *jobs[i];
    if (job.state() != "active" || job.get("worker_id") != worker_id) continue;
    RunningJob r = running_job_from(job, held[i].queue, now);
    r.gpus = held[i].gpus;
    r.devices = held[i].devices;
    r.labels = held[i].labels;
    out.push_back(std::move(r));
  }
  return out;
}

int PreemptionController::preempt() {
  auto& store = jobs_.store();
  auto marks = store.preemption();
  const auto now = now_ms();

  // Live workers with capabilities, and the holds in force.
  struct Candidate {
    WorkerInfo info;
    ml::Capabilities caps;
  };
  std::vector<Candidate> live;
  for (auto& w : workers_.list()) {
    if (w.state != "running" || w.last_seen_ms < now - config_.worker_dead_after_ms || !w.capabilities.is_object()) continue;
    try {
      live.push_back({w, ml::parse_capabilities(w.capabilities)});
    } catch (const std::exception&) {
    }
  }
  std::set<std::string> held_workers, pending_preemptors;
  for (const auto& [holder, text] : marks.holds()) {
    auto h = CapacityHold::parse(holder, text);
    if (!h || h->until_ms <= now) {
      marks.drop_hold(holder);
      continue;
    }
    held_workers.insert(h->worker_id);
    pending_preemptors.insert(h->for_job);
  }
  if (live.empty()) return 0;
  const ml::AssignmentOptions assignment = assignment_options(config_);

  int started = 0;
  for (const auto& queue : store.queues()) {
    if (store.is_paused(queue)) continue;
    const auto classes = store.load_classes(queue);
    for (const auto& [class_id, class_json] : classes.classes) {
      const auto head = marks.ready_head(queue, class_id);
      if (!head) continue;
      const std::string preemptor = head->first;
      const int rank = class_rank_of_score(head->second);
      if (rank == 0 || pending_preemptors.count(preemptor)) continue;
      const ml::Requirements& req = scheduler_.requirements(class_id, class_json);
      if (!req.scheduling.reservation_id.empty()) continue;  // reservations hold their own capacity
      // Workers whose recent judgement of this class shows a static refusal cannot
      // be helped by preemption; skip them without reading their load.
      std::set<std::string> static_refusers;
      for (const auto& record : diagnosis_.recent(queue, class_id))
        if (!dynamic_only(record.judgement)) static_refusers.insert(record.worker_id);

      std::optional<std::pair<const Candidate*, VictimChoice>> best;
      bool fits_somewhere = false;
      for (const auto& c : live) {
        if (held_workers.count(c.info.id) || static_refusers.count(c.info.id)) continue;
        if (!c.info.queues.empty() && std::find(c.info.queues.begin(), c.info.queues.end(), queue) == c.info.queues.end()) continue;
        if (!ml::fits_static(req, &c.caps)) continue;
        const auto running = running_on(c.info.id);
        std::set<std::string> leaving;
        for (const auto& r : running)
          if (r.preempting) leaving.insert(r.job_id);
        if (ml::fits(req, &c.caps, load_without(running, leaving), assignment)) {
          fits_somewhere = true;  // a worker can take it (or soon will): no preemption
          break;
        }
        auto choice = choose_victims(req, rank, c.caps, running, assignment);
        if (choice && (!best || cheaper(*choice, best->second))) best.emplace(&c, std::move(*choice));
      }
      if (fits_somewhere) {
        // Capacity exists; if the queue's budget is what keeps the job waiting,
        // free budget held by lower-class work.
        if (preempt_for_budget(queue, preemptor, rank, req.gpu_count())) {
          pending_preemptors.insert(preemptor);
          ++started;
        }
        continue;
      }
      if (!best) continue;

      // Mark the victims, then hold the capacity.
      const auto& [worker, choice] = *best;
      const auto last_deadline = mark(preemptor, choice.victims);
      if (!last_deadline) continue;
      CapacityHold hold;
      hold.worker_id = worker->info.id;
      hold.for_job = preemptor;
      hold.queue = queue;
      hold.class_id = class_id;
      hold.class_rank = rank;
      hold.victims = choice.victims;
      hold.until_ms = *last_deadline + config_.capacity_hold_ms;
      marks.put_hold(hold.worker_id, hold.to_json().dump());
      held_workers.insert(hold.worker_id);
      pending_preemptors.insert(preemptor);
      ++started;
      std::string ids;
      for (const auto& v : choice.victims) ids += (ids.empty() ? "" : ", ") + v.job_id;
      spdlog::info("preempting {} on worker {} for job {} (queue {}, class rank {})", ids, hold.worker_id, preemptor, queue, rank);
    }
  }
  return started;
}

std::optional<std::int64_t> PreemptionController::mark(const std::string& preemptor, const std::vector<RunningJob>& victims) {
  auto marks = jobs_.store().preemption();
  std::map<std::pair<std::string, std::string>, std::vector<PreemptionMark>> by_queue_and_worker;
  for (const auto& v : victims)
    by_queue_and_worker[{v.queue, v.worker_id}].push_back({v.job_id, v.grace_period_s, v.checkpoint_on_preempt});
  std::int64_t last_deadline = now_ms();
  for (const auto& [where, list] : by_queue_and_worker) {
    const auto marked = marks.mark(where.first, preemptor, where.second, list);
    if (!marked) return std::nullopt;
    for (const auto& [_, deadline] : *marked) last_deadline = std::max(last_deadline, deadline);
  }
  return last_deadline;
}

QueueBudget PreemptionController::budget_of(const std::string& queue) {
  const BudgetUse use = jobs_.store().budget(queue);
  QueueBudget b;
  b.max_gpus = use.max_gpus;
  b.max_jobs = use.max_jobs;
  b.gpus_in_use = use.gpus_in_use;
  b.gpu_jobs = use.gpu_jobs;
  return b;
}

std::vector<RunningJob> PreemptionController::charged_in(const std::string& queue) {
  auto& store = jobs_.store();
  const auto active = store.active_jobs(queue);
  std::vector<RunningJob> out;
  if (active.empty()) return out;
  std::vector<std::pair<std::string, std::string>> wanted;
  for (const auto& [id, _] : active) wanted.emplace_back(queue, id);
  const auto now = now_ms();
  for (const auto& found : store.get_many(wanted)) {
    if (!found || found->state() != "active") continue;
    const JobRecord& job = *found;
    RunningJob r = running_job_from(job, queue, now);
    r.gpus = static_cast<int>(job.get_int("charged_gpus").value_or(0));
    out.push_back(std::move(r));
  }
  return out;
}

bool PreemptionController::preempt_for_budget(const std::string& queue, const std::string& preemptor, int rank, int gpus) {
  const QueueBudget budget = budget_of(queue);
  if (budget.allows(gpus)) return false;
  const auto choice = choose_budget_victims(gpus, rank, budget, charged_in(queue));
  if (!choice || !mark(preemptor, choice->victims)) return false;
  std::string ids;
  for (const auto& v : choice->victims) ids += (ids.empty() ? "" : ", ") + v.job_id;
  spdlog::info("queue {}: preempting {} to free GPU budget for job {} (class rank {})", queue, ids, preemptor, rank);
  return true;
}

}  // namespace ojs::broker
