// The preemption controller. Decisions (escalation, reservation timeouts,
// choosing and marking victims) are taken by one broker at a time, the holder
// of a Redis lease; reclaiming jobs whose preemption deadline passed is
// idempotent (fail.lua compare-and-set) and done by every broker.
// This file: the lease and the pass order; each kind of work has its own file.
#include <spdlog/spdlog.h>

#include "ojs/core/uuid.hpp"
#include "broker/preemption/preemption.hpp"
#include "broker/preemption/running_jobs.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker {

using nlohmann::json;

PreemptionController::PreemptionController(JobReads& jobs, QueueDirectory& queues, PreemptionStore& marks, CohortStore& cohorts, RequeueJob requeue, Scheduler& scheduler, DiagnosisLog& diagnosis,
                                           WorkerRegistry& workers, GangStore& gangs, const BrokerConfig& config)
    : jobs_(jobs), queues_(queues), marks_(marks), cohorts_(cohorts), requeue_(std::move(requeue)), scheduler_(scheduler), diagnosis_(diagnosis), workers_(workers), gangs_(gangs), config_(config), owner_(make_uuidv7()) {}

bool PreemptionController::renew_lease() {
  const auto ttl = std::max<std::int64_t>(3 * config_.preemption_interval_ms, 2000);
  const bool leading = marks_.hold_lease(owner_, ttl);
  if (leading != leading_) spdlog::info("preemption controller: {} the leader lease", leading ? "took" : "lost");
  leading_ = leading;
  return leading;
}

void PreemptionController::run_once() {
  const auto queues = queues_.queues();
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
  balance_cohorts(queues);
  reserve_for_backfill();  // before preempt(), which drops expired holds
  preempt();
}

}  // namespace ojs::broker
