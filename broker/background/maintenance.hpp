// The broker's background loop: promotes due scheduled jobs and retries, and
// reclaims jobs whose visibility timeout expired. Every step is an idempotent
// Lua transition, so any number of brokers may run it against one Redis.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <condition_variable>
#include <functional>
#include <vector>
#include <mutex>
#include <thread>

#include "broker/config.hpp"
#include "broker/jobs/reaper.hpp"
#include "broker/store/queue_directory.hpp"
#include "broker/store/upkeep_store.hpp"
#include "broker/workers/worker_registry.hpp"

namespace ojs::broker {

class Maintenance {
 public:
  Maintenance(QueueDirectory& queues, UpkeepStore& upkeep, Reaper& reaper, WorkerRegistry& workers, const BrokerConfig& config)
      : queues_(queues), upkeep_(upkeep), reaper_(reaper), workers_(workers), config_(config) {}
  ~Maintenance() { stop(); }
  void start();  // the first pass at once, then one every --maintenance-interval-ms; 0: none
  void stop();
  void run_once();  // one pass over every queue (tests call it directly)
  // Extra work run at the end of every pass (the preemption controller); add before start().
  void add_step(std::function<void()> step) { steps_.push_back(std::move(step)); }
  // A step run about every `period_ms`: on the first pass, then once per period's worth
  // of passes (--maintenance-interval-ms apart).
  void add_step_every(std::int64_t period_ms, std::function<void()> step) {
    const auto every = std::max<std::int64_t>(1, period_ms / std::max<std::int64_t>(1, config_.maintenance_interval_ms));
    steps_.push_back([every, pass = std::int64_t{0}, step = std::move(step)]() mutable {
      if (pass++ % every == 0) step();
    });
  }

 private:
  QueueDirectory& queues_;
  UpkeepStore& upkeep_;
  Reaper& reaper_;
  WorkerRegistry& workers_;
  const BrokerConfig& config_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::vector<std::function<void()>> steps_;
  long long passes_ = 0;
};

}  // namespace ojs::broker
