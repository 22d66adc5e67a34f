// [backfill] The controller's backfill pass (leader only): in queues whose config
// has `backfill`, the oldest job of each GPU class that has waited `after_s` and
// fits no worker now gets a reservation on the worker where the declared ends of
// the running jobs free enough GPUs soonest (EASY backfilling). The reservation is
// a capacity hold with backfill_start_ms; FETCH lets other jobs use its GPUs only
// when they are declared to end before that start (fetch_guards.cpp, claim.lua).
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
  auto marks = store_.preemption();
  const auto now = now_ms();
  std::set<std::string> held_workers, reserved_jobs;
  for (const auto& [worker, text] : marks.holds()) {
    auto h = CapacityHold::parse(worker, text);
    if (!h || h->until_ms <= now) continue;  // expired: replaced below, or dropped by preempt()
    if (h->backfill_start_ms > 0) {
      auto job = store_.get(h->queue, h->for_job);
      if (!job || job->state() != "available") {  // claimed or cancelled: the reservation ends
        marks.drop_hold(worker);
        continue;
      }
    }
    held_workers.insert(worker);
    reserved_jobs.insert(h->for_job);
  }
  std::optional<std::vector<LiveWorker>> live;
  const ml::AssignmentOptions assignment = assignment_options(config_);
  int made = 0;
  for (const auto& queue : store_.queues()) {
    const auto setting = marks.backfill_setting(queue);
    if (!setting) continue;
    governance::BackfillSettings backfill;
    try {
      backfill = governance::parse_backfill(nlohmann::json::parse(*setting));
    } catch (const std::exception&) {
      continue;
    }
    if (!backfill.enabled || store_.is_paused(queue)) continue;
    // Class heads in claim order (score: band, then FIFO), so the longest-waiting
    // job of the queue is the first to get a worker.
    std::vector<std::tuple<double, std::string, std::string, std::string>> heads;  // score, job, class, class JSON
    for (const auto& [class_id, class_json] : store_.load_classes(queue).classes)
      if (auto head = marks.ready_head(queue, class_id)) heads.emplace_back(head->second, head->first, class_id, class_json);
    std::sort(heads.begin(), heads.end());
    for (const auto& [score, job_id, class_id, class_json] : heads) {
      if (reserved_jobs.count(job_id)) continue;
      const std::optional<std::pair<std::string, double>> head = std::make_pair(job_id, score);
      const ml::Requirements& req = scheduler_.requirements(class_id, class_json);
      if (req.gpu_count() == 0 || !req.scheduling.reservation_id.empty() || req.hard.gang.size > 0) continue;
      const auto job = store_.get(queue, head->first);
      if (!job || now - job->get_int("enqueued_at").value_or(now) < backfill.after_s * 1000) continue;
      if (!live) live = live_workers();
      std::optional<std::pair<const LiveWorker*, std::int64_t>> best;
      bool fits_now = false;
      for (const auto& w : *live) {
        if (held_workers.count(w.info.id) || !w.serves(queue) || !ml::fits_static(req, &w.caps)) continue;
        const auto start = earliest_start(req, w.caps, running_on(w.info.id), now, assignment);
        if (!start) continue;
        if (*start <= now) {  // fits there now: its next FETCH takes it
          fits_now = true;
          break;
        }
        if (!best || *start < best->second) best.emplace(&w, *start);
      }
      if (fits_now || !best || best->second - now > backfill.max_start_s * 1000) continue;
      CapacityHold hold;
      hold.worker_id = best->first->info.id;
      hold.for_job = head->first;
      hold.queue = queue;
      hold.class_id = class_id;
      hold.class_rank = class_rank_of_score(head->second);
      hold.backfill_start_ms = best->second;
      hold.gpus = req.gpu_count();
      hold.until_ms = best->second + config_.capacity_hold_ms;
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

}  // namespace ojs::broker
