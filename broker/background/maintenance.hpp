// The broker's background loop: promotes due scheduled jobs and retries, and
// reclaims jobs whose visibility timeout expired. Every step is an idempotent
// Lua transition, so any number of brokers may run it against one Redis.
#pragma once
#include <atomic>
#include <condition_variable>
#include <functional>
#include <vector>
#include <mutex>
#include <thread>

#include "broker/config.hpp"
#include "broker/jobs/job_service.hpp"
#include "broker/workers/worker_registry.hpp"

namespace ojs::broker {

class Maintenance {
 public:
  Maintenance(JobService& jobs, WorkerRegistry& workers, const BrokerConfig& config)
      : jobs_(jobs), workers_(workers), config_(config) {}
  ~Maintenance() { stop(); }
  void start();
  void stop();
  void run_once();  // one pass over every queue (tests call it directly)
  // Extra work run at the end of every pass (the preemption controller); add before start().
  void add_step(std::function<void()> step) { steps_.push_back(std::move(step)); }

 private:
  JobService& jobs_;
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
