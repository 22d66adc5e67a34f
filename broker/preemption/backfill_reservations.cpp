// The controller's backfill pass (leader only): in queues whose config
// has `backfill`, the oldest job of each GPU class that has waited `after_s` and
// fits no worker now gets a reservation on the worker where the declared ends of
// the running jobs free enough GPUs soonest (EASY backfilling). The reservation is
// a capacity hold with backfill_start_ms; FETCH lets other jobs use its GPUs only
// when they are declared to end before that start (capacity_guard_filter.cpp, claim.lua).
// Heads are served in backfill_order (larger jobs first, then band, then FIFO).
// It ends when the job is claimed or cancelled (the guard voids it, this pass
// drops it), or --capacity-hold-ms after its start (the running jobs overran their
// declarations): the next pass plans again.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <tuple>

#include "broker/governance/queue_config.hpp"
#include "broker/preemption/backfill.hpp"
#include "broker/preemption/preemption.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker {

int PreemptionController::reserve_for_backfill() {
  auto& marks = marks_;
  const auto now = now_ms();
  std::set<std::string> held_workers, reserved_jobs;
  for (const auto& [worker, text] : marks.holds()) {
    auto h = CapacityHold::parse(worker, text);
    if (!h || h->until_ms <= now) continue;  // expired: replaced below, or dropped by preempt()
    if (h->backfill_start_ms > 0 && !hold_still_wanted(jobs_, *h)) {  // claimed or cancelled: the reservation ends
      marks.drop_hold(worker);
      continue;
    }
    held_workers.insert(worker);
    reserved_jobs.insert(h->for_job);
  }
  // Live workers and what runs on them, read once per pass (reservations do not change them).
  std::optional<std::vector<LiveWorker>> live;
  std::vector<BackfillCandidate> running;  // parallel to *live
  const ml::AssignmentOptions assignment = assignment_options(config_);
  int made = 0;
  for (const auto& queue : queues_.queues()) {
    const auto setting = marks.backfill_setting(queue);
    if (!setting) continue;
    governance::BackfillSettings backfill;
    try {
      backfill = governance::parse_backfill(nlohmann::json::parse(*setting));
    } catch (const std::exception&) {
      continue;
    }
    if (!backfill.enabled || queues_.is_paused(queue)) continue;
    struct Head {
      std::tuple<double, int, double> order;
      std::string job_id, class_id;
      const ml::Requirements* req;
    };
    std::vector<Head> heads;
    for (const auto& [class_id, class_json] : queues_.load_classes(queue).classes) {
      const ml::Requirements& req = scheduler_.requirements(class_id, class_json);
      if (req.gpu_count() == 0 || !req.scheduling.reservation_id.empty() || req.hard.gang.size > 0) continue;
      if (auto head = marks.ready_head(queue, class_id))
        heads.push_back({backfill_order(head->second, req.gpu_count()), head->first, class_id, &req});
    }
    std::sort(heads.begin(), heads.end(), [](const Head& a, const Head& b) { return a.order < b.order; });
    for (const auto& head : heads) {
      if (reserved_jobs.count(head.job_id)) continue;
      const auto job = jobs_.get(queue, head.job_id);
      if (!job || now - job->get_int("enqueued_at").value_or(now) < backfill.after_s * 1000) continue;
      if (!live) {
        live = live_workers();
        for (const auto& w : *live) running.push_back({&w.caps, running_on(w.info.id), w.info.drained_devices});
      }
      std::vector<BackfillCandidate> candidates;
      std::vector<const LiveWorker*> workers;
      for (std::size_t i = 0; i < live->size(); ++i) {
        const auto& w = (*live)[i];
        if (held_workers.count(w.info.id) || !w.serves(queue)) continue;
        candidates.push_back(running[i]);
        workers.push_back(&w);
      }
      const BackfillPlan plan = plan_backfill(*head.req, candidates, now, assignment);
      if (plan.fits_now || plan.candidate < 0 || plan.start_ms - now > backfill.max_start_s * 1000) continue;
      CapacityHold hold;
      hold.worker_id = workers[static_cast<std::size_t>(plan.candidate)]->info.id;
      hold.for_job = head.job_id;
      hold.queue = queue;
      hold.class_id = head.class_id;
      hold.class_rank = job->priority_class_rank();
      hold.backfill_start_ms = plan.start_ms;
      hold.gpus = head.req->gpu_count();
      hold.until_ms = plan.start_ms + config_.capacity_hold_ms;
      marks.put_hold(hold.worker_id, hold.to_json().dump());
      held_workers.insert(hold.worker_id);
      reserved_jobs.insert(hold.for_job);
      ++made;
      spdlog::info("backfill: worker {} reserved for job {} (queue {}, {} GPUs) from {}", hold.worker_id, hold.for_job, queue,
                   hold.gpus, format_rfc3339(hold.backfill_start_ms));
    }
  }
  return made;
}

std::optional<CapacityHold> backfill_hold_of(PreemptionStore& store, const std::string& job_id) {
  for (const auto& [worker, text] : store.holds()) {
    auto h = CapacityHold::parse(worker, text);
    if (h && h->for_job == job_id && h->backfill_start_ms > 0) return h;
  }
  return std::nullopt;
}

}  // namespace ojs::broker
