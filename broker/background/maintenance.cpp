#include "broker/background/maintenance.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "broker/store/store_error.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker {

namespace {
constexpr long long kClassHeadsCheckEvery = 300;  // passes (a minute at the default 200 ms)
constexpr long long kLostStopsEvery = 25;         // passes (5 s at the default 200 ms): a read of each lost worker's held sets
}

void Maintenance::run_once() {
  auto& store = upkeep_;
  const auto lost = workers_.stale(now_ms() - config_.worker_dead_after_ms);
  const std::set<std::string> lost_workers(lost.begin(), lost.end());
  // One queue's failure (or one step's) is logged and the pass goes on; only a
  // Redis outage ends the pass.
  const auto queues = queues_.queues();
  const auto due = store.due_work(queues, now_ms());  // idle queues cost two cheap reads, no script
  for (std::size_t qi = 0; qi < queues.size(); ++qi) {
    const auto& queue = queues[qi];
    try {
      if (!lost_workers.empty())
        if (int n = reaper_.reclaim_from_lost_workers(queue, lost_workers); n > 0)
          spdlog::warn("queue {}: reclaimed {} job(s) from workers that stopped heartbeating", queue, n);
      // The class-head index is checked on the first pass (an upgraded Redis has
      // none yet) and then about once a minute; a correction after that means a
      // ready-set write bypassed _lib.lua's helpers, which is a bug worth a warning.
      if (passes_ % kClassHeadsCheckEvery == 0)
        if (long long n = store.repair_class_heads(queue); n > 0)
          spdlog::warn("queue {}: corrected {} class-head index entr{}", queue, n, n == 1 ? "y" : "ies");
      // Expiry before promotion: a scheduled job past its expires_at never becomes available.
      if (due[qi].expired) {
        constexpr int kSweepSlice = 1000;  // entries per script call: Redis is never held long
        long long discarded = 0;
        for (;;) {
          const auto s = store.sweep_expired(queue, kSweepSlice);
          discarded += s.discarded;
          if (s.handled < kSweepSlice) break;
        }
        if (discarded > 0) spdlog::info("queue {}: discarded {} job(s) past their expires_at", queue, discarded);
      }
      if (due[qi].promote) store.promote(queue);
      if (due[qi].gangs)
        if (long long n = store.expire_gangs(queue); n > 0)
          spdlog::info("queue {}: released {} gang(s) that did not complete before their hold deadline", queue, n);
      if (int n = reaper_.reclaim_expired(queue); n > 0)
        spdlog::info("queue {}: reclaimed {} job(s) whose visibility timeout expired", queue, n);
    } catch (const StoreUnavailable&) {
      throw;
    } catch (const std::exception& e) {
      spdlog::error("maintenance of queue {} failed: {}", queue, e.what());
    }
  }
  if (passes_ % kLostStopsEvery == 0)
    for (const auto& worker : lost) {
      try {
        if (int n = reaper_.end_stops_of_lost_worker(worker, workers_.held_state(worker).preempting); n > 0)
          spdlog::warn("worker {} is lost: {} cancelled job(s) it was stopping no longer hold its devices", worker, n);
      } catch (const StoreUnavailable&) {
        throw;
      } catch (const std::exception& e) {
        spdlog::error("ending the stops of lost worker {} failed: {}", worker, e.what());
      }
    }
  for (const auto& step : steps_) {
    try {
      step();
    } catch (const StoreUnavailable&) {
      throw;
    } catch (const std::exception& e) {
      spdlog::error("maintenance step failed: {}", e.what());
    }
  }
  ++passes_;
  // After the reclaim above: workers gone past the retention window are
  // forgotten, so listings and the preemption controller's scan stay bounded.
  const auto retention = std::max(config_.worker_retention_ms, config_.worker_dead_after_ms);
  if (auto forgotten = workers_.prune(now_ms() - retention, 1000); !forgotten.empty())
    spdlog::info("forgot {} worker(s) silent for more than {} ms", forgotten.size(), retention);
}

void Maintenance::start() {
  // --maintenance-interval-ms 0: no pass at all on this broker, not even the first
  // one at start (a long interval still runs that one, at once, beside the first requests).
  if (config_.maintenance_interval_ms == 0) {
    spdlog::warn("maintenance is off on this broker (--maintenance-interval-ms 0): another broker of this Redis must run it, "
                 "or scheduled jobs, retries, expired reservations, cron and preemption wait");
    return;
  }
  thread_ = std::thread([this] {
    bool was_down = false;
    std::unique_lock lock(mutex_);
    while (!stopping_) {
      lock.unlock();
      try {
        run_once();
        if (was_down) spdlog::info("maintenance: Redis is reachable again");
        was_down = false;
      } catch (const StoreUnavailable& e) {
        if (!was_down) spdlog::warn("maintenance: Redis unavailable: {}", e.what());
        was_down = true;
      } catch (const std::exception& e) {
        spdlog::error("maintenance pass failed: {}", e.what());
      }
      lock.lock();
      wake_.wait_for(lock, std::chrono::milliseconds(config_.maintenance_interval_ms), [this] { return stopping_; });
    }
  });
}

void Maintenance::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace ojs::broker
