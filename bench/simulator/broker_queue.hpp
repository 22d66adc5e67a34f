// The broker's own queue, for the simulator: a real redis-server (EmbeddedRedis,
// private unix socket) and the broker's JobStore, so PUSH scores jobs with
// broker::order_base and every claim is the real claim.lua (policy, fair share,
// budgets, tenant ledger). The simulator decides only what the broker's scheduler
// decides per FETCH (eligible classes, soft scores, devices) and when jobs end;
// which job a worker gets is never computed in bench/simulator.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "broker/store/job_store.hpp"
#include "broker/store/priority_score.hpp"
#include "simulator/trace.hpp"

namespace ojs::bench {

struct BrokerQueueOptions {
  broker::QueuePolicy policy = broker::QueuePolicy::priority;
  std::map<std::string, double> tenant_weights;  // the fair policy's weights
  std::string redis_binary = "redis-server";
};

class BrokerQueue {
 public:
  explicit BrokerQueue(const BrokerQueueOptions& options);
  ~BrokerQueue();
  BrokerQueue(const BrokerQueue&) = delete;
  BrokerQueue& operator=(const BrokerQueue&) = delete;

  void push(int job, const SimJob& j);
  // The job claim.lua gives `worker` among `eligible` (the broker's class verdicts), or -1.
  int claim(const std::string& worker, const std::vector<broker::EligibleClass>& eligible);
  void ack(int job, const std::string& worker);
  void requeue(int job, const std::string& worker);  // preempted: available again, as fail.lua requeues

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ojs::bench
