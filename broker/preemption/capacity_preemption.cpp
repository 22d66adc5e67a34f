// Preemption for capacity: a waiting higher-class job that fits no worker as
// things stand gets the cheapest set of lower-class victims on one worker
// marked, and the freed GPUs held for it (leader only).
#include <spdlog/spdlog.h>

#include <algorithm>

#include "broker/preemption/capacity_plan.hpp"
#include "broker/preemption/preemption.hpp"
#include "broker/preemption/running_jobs.hpp"
#include "broker/scheduling/fair_order.hpp"
#include "ojs/ml/device_assignment.hpp"
#include "broker/workers/liveness.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker {

using nlohmann::json;

namespace {

// Whether preemption could cure a worker's refusals: by their verdict codes, never
// by predicate names. Freeing lower-class work cures `wait` (busy now) and
// `preemptible`; never `unresolvable` (the worker could not take the job however
// idle) nor `held` (capacity kept back on purpose: a reservation, a backfill window).
bool dynamic_only(const ml::Judgement& j) {
  return std::all_of(j.refusals.begin(), j.refusals.end(), [](const ml::Refusal& r) {
    return r.code == ml::VerdictCode::wait || r.code == ml::VerdictCode::preemptible;
  });
}

// The holds in force (expired ones and those whose preemptor no longer waits are
// dropped): the workers they keep, and the preemptors they keep capacity for (a
// backfill reservation does not stop preemption).
void holds_in_force(PreemptionStore& marks, JobReads& jobs, std::int64_t now, std::set<std::string>& held_workers,
                    std::set<std::string>& pending_preemptors) {
  for (const auto& [holder, text] : marks.holds()) {
    auto h = CapacityHold::parse(holder, text);
    if (!h || h->until_ms <= now) {
      marks.drop_hold(holder);
      continue;
    }
    if (h->backfill_start_ms == 0 && !hold_still_wanted(jobs, *h)) {  // a preemption hold ends once its preemptor is placed (or gone)
      marks.drop_hold(holder);
      continue;
    }
    held_workers.insert(h->worker_id);
    if (h->backfill_start_ms == 0) pending_preemptors.insert(h->for_job);
  }
}

}  // namespace

std::vector<LiveWorker> PreemptionController::live_workers() {
  return broker::live_workers(workers_, now_ms(), config_.worker_dead_after_ms);
}

int PreemptionController::head_class_rank(const std::string& queue, const std::pair<std::string, double>& head) {
  if (const auto rank = class_rank_of_ready_score(head.second)) return *rank;
  const auto job = jobs_.get(queue, head.first);  // fifo / sjf / fair: the score's band is the policy's
  return job ? job->priority_class_rank() : -1;
}

std::vector<RunningJob> PreemptionController::running_on(const std::string& worker_id) {
  std::vector<RunningJob> out;
  for (auto& [running, record] : running_records_on(jobs_, workers_, worker_id, now_ms())) out.push_back(std::move(running));
  return out;
}

int PreemptionController::preempt() {
  auto& marks = marks_;
  const auto now = now_ms();

  // The holds in force, then (only once a waiting head could preempt) the live
  // workers with their capabilities: reading every worker's profile each pass is
  // the costly part, and most passes find no head above rank 0.
  using Candidate = LiveWorker;
  std::optional<std::vector<Candidate>> live_once;
  const auto live = [&]() -> const std::vector<Candidate>& {
    if (!live_once) live_once = live_workers();
    return *live_once;
  };
  std::set<std::string> held_workers, pending_preemptors;
  holds_in_force(marks, jobs_, now, held_workers, pending_preemptors);
  const ml::AssignmentOptions assignment = assignment_options(config_);

  int started = 0;
  for (const auto& queue : queues_.queues()) {
    if (queues_.is_paused(queue)) continue;
    const auto classes = queues_.load_classes(queue);
    // Under fair's tenant order, the tenants' shares (read once a head may preempt).
    std::optional<std::optional<FairShares>> shares_once;
    const auto shares = [&]() -> const std::optional<FairShares>& {
      if (!shares_once) shares_once = fair_shares_of(marks.fair_usage(queue), false);
      return *shares_once;
    };
    for (const auto& [class_id, class_json] : classes.classes) {
      const auto head = marks.ready_head(queue, class_id);
      if (!head) continue;
      const std::string preemptor = head->first;
      const int rank = head_class_rank(queue, *head);
      if (pending_preemptors.count(preemptor)) continue;
      const ml::Requirements& req = scheduler_.requirements(class_id, class_json);
      if (!may_preempt(req, rank)) continue;  // spot, or a reservation's job (it holds its own capacity)
      if (live().empty()) return started;
      // Workers whose recent judgement of this class shows a static refusal cannot
      // be helped by preemption; skip them without reading their load.
      std::set<std::string> static_refusers;
      for (const auto& record : diagnosis_.recent(queue, class_id))
        if (!dynamic_only(record.judgement)) static_refusers.insert(record.worker_id);

      std::vector<const Candidate*> candidates;
      std::vector<PreemptionSite> sites;
      for (const auto& c : live()) {
        if (held_workers.count(c.info.id) || static_refusers.count(c.info.id)) continue;
        if (!c.serves(queue)) continue;
        candidates.push_back(&c);
        sites.push_back({&c.caps, c.info.drained_devices});
      }
      std::string tenant;  // the preemptor's, for the tenant order's share rule
      if (shares()) {
        const auto record = jobs_.get(queue, preemptor);
        tenant = record ? record->get("tenant") : std::string();
      }
      const VictimFilter allowed = fair_victims(shares(), queue, tenant, req.gpu_count());
      if (req.hard.gang.size > 0) {  // one worker per member it still needs
        if (preempt_for_gang(queue, class_id, preemptor, rank, req, candidates, sites, allowed, shares(), held_workers)) {
          pending_preemptors.insert(preemptor);
          ++started;
        }
        continue;
      }
      const auto plan = plan_capacity_preemption(
          req, rank, sites, [&](std::size_t i) { return running_on(candidates[i]->info.id); }, assignment, allowed);
      const bool fits_somewhere = plan.fits_on.has_value();  // a worker can take it (or soon will): no preemption
      long long fit_gpu_mem_mb = 0;  // what it would be charged where it fits (a GPU-memory budget)
      if (fits_somewhere && req.gpu_count() > 0) {
        const auto& caps = candidates[*plan.fits_on]->caps;
        fit_gpu_mem_mb = ml::gpu_memory_charge_mb(caps.devices, ml::judge_dynamic(req, &caps, plan.fit_load, assignment).devices,
                                                  req.hard.gpu.memory_gb, req.gpu_count());
      }
      if (fits_somewhere) {
        // Capacity exists; if the queue's budget is what keeps the job waiting,
        // free budget held by lower-class work.
        const long long tpu_chips = req.hard.gang.size > 1 ? 0 : req.hard.tpu.chip_count;  // a gang's claim charges none
        if (preempt_for_budget(queue, preemptor, rank, {req.gpu_count(), 1, fit_gpu_mem_mb, tpu_chips}, allowed)) {
          pending_preemptors.insert(preemptor);
          ++started;
        }
        continue;
      }
      if (!plan.worker) continue;

      const std::string& worker = candidates[*plan.worker]->info.id;
      if (!mark_and_hold(worker, {preemptor, queue, class_id, rank, req.gpu_count()}, plan.choice.victims)) continue;
      held_workers.insert(worker);
      pending_preemptors.insert(preemptor);
      ++started;
    }
  }
  return started;
}

bool PreemptionController::mark_and_hold(const std::string& worker_id, const HoldFor& preemptor, const std::vector<RunningJob>& victims) {
  const auto last_deadline = mark(preemptor.job_id, victims);
  if (!last_deadline) return false;
  CapacityHold hold;
  hold.worker_id = worker_id;
  hold.for_job = preemptor.job_id;
  hold.queue = preemptor.queue;
  hold.class_id = preemptor.class_id;
  hold.class_rank = preemptor.rank;
  hold.victims = victims;
  hold.gpus = preemptor.gpus;  // the victims' GPUs and the free ones the plan counted on
  hold.until_ms = *last_deadline + config_.capacity_hold_ms;
  marks_.put_hold(hold.worker_id, hold.to_json().dump());
  std::string ids;
  for (const auto& v : victims) ids += (ids.empty() ? "" : ", ") + v.job_id + (v.leaves ? " (member on " + v.worker_id + " leaves)" : "");
  spdlog::info("preempting {} on worker {} for job {} (queue {}, class rank {})", ids, worker_id, preemptor.job_id, preemptor.queue,
               preemptor.rank);
  return true;
}

std::optional<std::int64_t> PreemptionController::mark(const std::string& preemptor, const std::vector<RunningJob>& victims) {
  auto& marks = marks_;
  std::map<std::pair<std::string, std::string>, std::vector<PreemptionMark>> by_queue_and_worker;
  std::int64_t last_deadline = now_ms();
  for (const auto& v : victims) {
    if (!v.leaves) {
      by_queue_and_worker[{v.queue, v.worker_id}].push_back({v.job_id, v.grace_period_s, v.checkpoint_on_preempt});
      continue;
    }
    const auto left = gangs_.mark_leaving(v.queue, v.job_id, v.worker_id, preemptor, v.grace_period_s, v.checkpoint_on_preempt);
    if (!left.deadline_ms) {
      spdlog::debug("member {} of gang {} not told to leave: {}", v.worker_id, v.job_id, left.refused);
      return std::nullopt;
    }
    last_deadline = std::max(last_deadline, *left.deadline_ms);
  }
  for (const auto& [where, list] : by_queue_and_worker) {
    const auto marked = marks.mark(where.first, preemptor, where.second, list);
    if (!marked) return std::nullopt;
    for (const auto& [_, deadline] : *marked) last_deadline = std::max(last_deadline, deadline);
  }
  return last_deadline;
}

}  // namespace ojs::broker
