// The broker's background loop: promotes due scheduled jobs and retries, and
// reclaims jobs whose visibility timeout expired. Every step is an idempotent
// Lua transition, so any number of brokers may run it against one Redis.
#pragma once
#include <atomic>
#include <condition_variable>
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

 private:
  JobService& jobs_;
  WorkerRegistry& workers_;
  const BrokerConfig& config_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
};

}  // namespace ojs::broker
