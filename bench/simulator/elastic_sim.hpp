// Distributed training jobs as gangs on a cluster of whole-node workers, in
// simulated time, through the broker's gang path: each job is pushed to a real
// redis-server by the broker's JobStore, every idle worker FETCHes through
// broker::Claimer::claim_gang over the broker's class verdicts (Scheduler::judge),
// and a finished gang's members all ACK. Which gang a worker joins, when a gang
// starts and when an elastic one grows are the broker's decisions; the simulation
// only runs the jobs: a job progresses at its speed-up curve for the members it has,
// and a resize restarts every member from its checkpoint (restart_s without progress).
// An elastic gang that waits takes members of equal gangs above their share as the
// preemption controller decides it (broker::plan_share_shrink): they leave at their
// grace period's end and their nodes are held for it.
#pragma once
#include <string>
#include <vector>

#include "simulator/elastic_metrics.hpp"
#include "simulator/elastic_trace.hpp"
#include "simulator/trace.hpp"

namespace ojs::bench {

struct ElasticSimOptions {
  GangMode mode = GangMode::elastic;
  double restart_s = 60;  // a resize: the members restart from their last checkpoint
  bool share_shrink = true;  // elastic: the controller's share shrink runs after each dispatch
  std::string redis_binary = "redis-server";
};

// `trace` on `nodes` workers of `node`'s capabilities, pushed as `options.mode` gangs.
ElasticResult simulate_gangs(const std::vector<ElasticJob>& trace, const WorkerSpec& node, int nodes,
                             const ElasticSimOptions& options);

}  // namespace ojs::bench
