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

std::vector<std::string> due(RedisPool& redis, const std::string& key, std::int64_t now) {
  auto v = redis.command({"ZRANGEBYSCORE", key, "-inf", std::to_string(now), "LIMIT", "0", "100"});
  std::vector<std::string> out;
  for (const auto& e : v.elements) out.push_back(e.str);
  return out;
}

}  // namespace

PreemptionController::PreemptionController(JobService& jobs, Scheduler& scheduler, DiagnosisLog& diagnosis,
                                           WorkerRegistry& workers, const BrokerConfig& config)
    : jobs_(jobs), scheduler_(scheduler), diagnosis_(diagnosis), workers_(workers), config_(config), owner_(make_uuidv7()) {}

bool PreemptionController::renew_lease() {
  const auto ttl = std::max<std::int64_t>(3 * config_.preemption_interval_ms, 2000);
  auto reply = jobs_.store().redis().eval("lease", {preemption_keys::leader}, {owner_, std::to_string(ttl)});
  const bool leading = reply.integer == 1;
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
  auto& redis = jobs_.store().redis();
  int moved = 0;
  for (const auto& id : due(redis, preemption_keys::preempting(queue), now_ms())) {
    auto job = jobs_.store().get(queue, id);
    if (!job || job->state() != "active" || !job->has("preempt_deadline")) {
      redis.command({"ZREM", preemption_keys::preempting(queue), id});
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
  int n = 0;
  for (const auto& id : due(store.redis(), preemption_keys::escalations(queue), now_ms())) {
    auto job = store.get(queue, id);
    auto req = job ? requirements_of(*job) : std::nullopt;
    const bool waiting = job && (job->state() == "available" || job->state() == "scheduled" || job->state() == "retryable");
    if (!req || !waiting) {
      store.redis().command({"ZREM", preemption_keys::escalations(queue), id});
      continue;
    }
    const int from = class_rank_of_score(static_cast<double>(job->get_int("rank_base").value_or(0)));
    auto reply = store.redis().eval("escalate", {}, {keys::queue_prefix(queue), id, std::to_string(target_rank(req->scheduling, from))});
    if (reply.elements.at(0).str == "ok") {
      ++n;
      spdlog::info("queue {}: job {} escalated after waiting {} s", queue, id, req->scheduling.escalation_after_s.value_or(0));
    }
  }
  return n;
}

int PreemptionController::expire_reservation_waits(const std::string& queue) {
  auto& store = jobs_.store();
  const auto now = now_ms();
  auto ids = due(store.redis(), preemption_keys::reservation_waits(queue), now);
  if (ids.empty()) return 0;
  const auto reservations = load_reservations(store.redis());
  int n = 0;
  for (const auto& id : ids) {
    store.redis().command({"ZREM", preemption_keys::reservation_waits(queue), id});
    auto job = store.get(queue, id);
    auto req = job ? requirements_of(*job) : std::nullopt;
    if (!req) continue;
    const auto& name = req->scheduling.reservation_id;
    auto it = reservations.find(name);
    if (it != reservations.end() && it->second.active(now)) continue;  // the reservation exists: keep waiting inside it
    const json error = {{"code", "reservation_unavailable"},
                        {"type", "reservation_unavailable"},
                        {"message", "reservation " + name + " does not exist or has expired; the job waited its ext_ml_reservation_timeout_s (" +
                                        std::to_string(req->scheduling.reservation_timeout_s.value_or(0)) + " s)"},
                        {"retryable", false},
                        {"occurred_at", format_rfc3339(now)}};
    auto reply = store.redis().eval("discard_waiting", {}, {keys::queue_prefix(queue), id, error.dump()});
    if (reply.elements.at(0).str == "ok") ++n;
  }
  return n;
}

std::vector<RunningJob> PreemptionController::running_on(const std::string& worker_id) {
  std::vector<RunningJob> out;
  const auto held = workers_.held_jobs(worker_id);
  if (held.empty()) return out;
  std::vector<std::vector<std::string>> cmds;
  for (const auto& h : held) cmds.push_back({"HGETALL", keys::job(h.queue, h.job_id)});
  auto replies = jobs_.store().redis().pipeline(cmds);
  const auto now = now_ms();
  for (std::size_t i = 0; i < held.size(); ++i) {
    const JobRecord job = JobRecord::from_flat_array(replies[i]);
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
  auto& redis = store.redis();
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
  auto holds = redis.command({"HGETALL", preemption_keys::holds});
  for (std::size_t i = 0; i + 1 < holds.elements.size(); i += 2) {
    auto h = CapacityHold::parse(holds.elements[i].str, holds.elements[i + 1].str);
    if (!h || h->until_ms <= now) {
      redis.command({"HDEL", preemption_keys::holds, holds.elements[i].str});
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
      auto head = redis.command({"ZRANGE", keys::ready(queue, class_id), "0", "0", "WITHSCORES"});
      if (head.elements.size() < 2) continue;
      const std::string preemptor = head.elements[0].str;
      const int rank = class_rank_of_score(std::stod(head.elements[1].str));
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
      redis.command({"HSET", preemption_keys::holds, hold.worker_id, hold.to_json().dump()});
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
  auto& redis = jobs_.store().redis();
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> by_queue_and_worker;
  for (const auto& v : victims) {
    auto& args = by_queue_and_worker[{v.queue, v.worker_id}];
    if (args.empty()) args = {keys::queue_prefix(v.queue), preemptor, v.worker_id};
    args.insert(args.end(), {v.job_id, std::to_string(v.grace_period_s), v.checkpoint_on_preempt ? "1" : "0"});
  }
  std::int64_t last_deadline = now_ms();
  for (const auto& [_, args] : by_queue_and_worker) {
    auto reply = redis.eval("preempt", {}, args);
    if (reply.elements.at(0).str != "ok") return std::nullopt;
    const auto& m = reply.elements.at(1).elements;
    for (std::size_t i = 1; i < m.size(); i += 2) last_deadline = std::max<std::int64_t>(last_deadline, std::stoll(m[i].str));
  }
  return last_deadline;
}

QueueBudget PreemptionController::budget_of(const std::string& queue) {
  auto replies = jobs_.store().redis().pipeline({{"HMGET", keys::config(queue), "max_total_gpus", "max_concurrent_gpu_jobs"},
                                                 {"HMGET", keys::ledger(queue), "gpus", "gpu_jobs"}});
  auto number = [](const RedisValue& v) -> std::optional<long long> {
    if (v.is_nil() || v.str.empty()) return std::nullopt;
    try {
      return std::stoll(v.str);
    } catch (...) {
      return std::nullopt;
    }
  };
  QueueBudget b;
  b.max_gpus = number(replies[0].elements.at(0));
  b.max_jobs = number(replies[0].elements.at(1));
  b.gpus_in_use = number(replies[1].elements.at(0)).value_or(0);
  b.gpu_jobs = number(replies[1].elements.at(1)).value_or(0);
  return b;
}

std::vector<RunningJob> PreemptionController::charged_in(const std::string& queue) {
  auto& store = jobs_.store();
  const auto active = store.active_jobs(queue);
  std::vector<RunningJob> out;
  if (active.empty()) return out;
  std::vector<std::vector<std::string>> cmds;
  for (const auto& [id, _] : active) cmds.push_back({"HGETALL", keys::job(queue, id)});
  auto replies = store.redis().pipeline(cmds);
  const auto now = now_ms();
  for (const auto& reply : replies) {
    const JobRecord job = JobRecord::from_flat_array(reply);
    if (job.state() != "active") continue;
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
