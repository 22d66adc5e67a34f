// The broker's own queue, for the simulator: a real redis-server (EmbeddedRedis,
// private unix socket) and the broker's JobStore, so PUSH scores jobs with
// broker::order_base and every claim is the real claim.lua (policy, fair share,
// budgets, tenant ledger). The class verdicts it is given are the broker's too
// (Scheduler::judge and the capacity guards, run in sim.cpp); the simulator decides
// only when jobs end. Which job a worker gets is never computed in bench/simulator.
// The redis-server runs on the simulated clock (sim_clock.c, preloaded):
// Redis TIME is kEpochMs + the simulated time, so the scripts' own measures
// (attempt durations, the fair order's decayed use, TTLs) are in simulated time.
#pragma once
#include <map>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "broker/store/fair_shares.hpp"
#include "broker/store/job_store.hpp"
#include "broker/store/priority_score.hpp"
#include "simulator/trace.hpp"

namespace ojs::bench {

struct BrokerQueueOptions {
  broker::QueuePolicy policy = broker::QueuePolicy::priority;
  std::map<std::string, double> tenant_weights;  // the fair policy's weights
  std::optional<double> half_life_seconds;  // tenant_fairness.half_life_seconds (unset: the broker's default)
  broker::FairOrder fair_order = broker::FairOrder::tenant;  // tenant_fairness.order
  std::string redis_binary = "redis-server";
  std::string clock_library = OJS_SIM_CLOCK_LIB;  // sim_clock.c, built with cluster_sim
};

// A gang member's FETCH as the worker reads the reply: held by a forming gang, or
// the gang started (or grown) with this worker at `rank` of `world_size`.
struct GangFetch {
  enum class Kind { none, held, started } kind = Kind::none;
  int job = -1;
  int rank = -1;
  int world_size = 0;      // started: ext_ml_gang_world_size
  std::string generation;  // started: ext_ml_gang_generation (changes with each resize)
};

class BrokerQueue {
 public:
  // The simulated clock's origin in Redis TIME: 2026-01-01T00:00:00Z.
  static constexpr std::int64_t kEpochMs = 1767225600000;
  // The one queue the simulated jobs are pushed to (the capacity guards name it).
  static constexpr const char* kQueue = "sim";

  explicit BrokerQueue(const BrokerQueueOptions& options);
  ~BrokerQueue();
  BrokerQueue(const BrokerQueue&) = delete;
  BrokerQueue& operator=(const BrokerQueue&) = delete;

  // Redis's clock is at simulated second `t` from now on (never moved back).
  void advance(double t);
  // Simulated second `t` in Redis's clock (ms), as the scripts read it.
  static std::int64_t redis_ms(double t);

  void push(int job, const SimJob& j);
  // The job claim.lua gives `worker` among `eligible` (the broker's class verdicts), or -1.
  int claim(const std::string& worker, const std::vector<broker::EligibleClass>& eligible);
  // The gang `worker` joins among `eligible` (the broker's class verdicts), as FETCH's
  // gang path claims it (broker::Claimer::claim_gang); none eligible still delivers a
  // started gang to a held member.
  // kept: a capacity hold keeps the worker for a preemptor (no running gang grows onto it).
  GangFetch claim_gang(const std::string& worker, const std::vector<broker::GangClass>& eligible, std::set<std::string> elastic = {},
                       bool kept = false);
  void ack(int job, const std::string& worker);  // a gang completes when each member has ACKed
  void requeue(int job, const std::string& worker);  // preempted: available again, as fail.lua requeues
  // A member of a running elastic gang is told to leave it for `preemptor` (the
  // controller's gang_leave.lua); false when the commit refused.
  bool mark_leaving(int job, const std::string& worker, int preemptor, int grace_period_s, bool checkpoint);
  // It is gone (its worker released it: gang_left.lua); the gang's world size after.
  int member_left(int job, const std::string& worker);
  // The gang forming in the queue (PreemptionStore::forming_gang), or -1.
  int forming_gang();
  // The head of each class's ready set in the queue's policy order (the job the
  // preemption controller reads, as PreemptionStore::ready_head), or -1; one round trip.
  std::vector<int> ready_heads(const std::vector<std::string>& class_ids);
  // The tenants' shares capacity preemption weighs under fair's tenant
  // order (the broker's PreemptionStore::fair_shares); nullopt under another order.
  std::optional<broker::FairShares> fair_shares();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ojs::bench
