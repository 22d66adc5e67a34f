// Preemption, checkpoints, capacity holds, priority escalation and reservations
// (docs/operations.md "Preemption"). The pieces other modules call:
//   PUSH : bind_reservation, check_checkpoint_prefix (push.lua writes the escalation and reservation-wait indexes)
//   FETCH: the capacity guards (capacity_guard_filter) read the holds and reservations
//   BEAT/FETCH replies: preemption_directives
//   background: PreemptionController (leader-only decisions, every-broker reclaim)
//   HTTP: api/preemption_api.cpp (checkpoint commit, reservations) calls Checkpoints and Reservations
// One file per job: push_rules, directives, reservations,
// capacity_hold, checkpoints; the controller's passes in controller (lease, order),
// reclaim_overdue, escalation, reservation_waits, capacity_preemption,
// budget_preemption, gang_preemption; running_jobs (active jobs as preemption sees them).
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "broker/config.hpp"
#include "broker/store/job_reads.hpp"
#include "broker/store/job_store.hpp"
#include "broker/store/queue_directory.hpp"
#include "broker/preemption/capacity_plan.hpp"
#include "broker/preemption/elastic_share_shrink.hpp"
#include "broker/preemption/running_jobs.hpp"
#include "broker/preemption/victims.hpp"
#include "broker/scheduling/capacity_hold.hpp"
#include "broker/scheduling/diagnosis_log.hpp"
#include "broker/scheduling/reservation.hpp"
#include "broker/scheduling/scheduler.hpp"
#include "broker/store/preemption_store.hpp"
#include "broker/store/cohort_store.hpp"
#include "broker/store/gang_store.hpp"
#include "broker/store/priority_score.hpp"
#include "broker/workers/worker_registry.hpp"

namespace ojs::broker {

// Device placement policy from --placement.
inline ml::AssignmentOptions assignment_options(const BrokerConfig& config) {
  ml::AssignmentOptions o;
  o.policy = config.placement == "spread" ? ml::PlacementPolicy::spread : ml::PlacementPolicy::pack;
  return o;
}

// ---- reservations (the type: scheduling/reservation.hpp) ----
// The admin's reservations (api/preemption_api.cpp): create from a body (400 naming
// the field), list with `active`, delete (404 when unknown).
class Reservations {
 public:
  explicit Reservations(PreemptionStore& store) : store_(store) {}
  nlohmann::json create(const nlohmann::json& body);
  nlohmann::json list();
  void remove(const std::string& id);

 private:
  PreemptionStore& store_;
};

// ---- PUSH ----
// A job naming a reservation gets its own requirement class (the reservation id
// joins the canonical JSON), so FETCH can apply the reservation predicate per class.
void bind_reservation(JobClassification& cls);
// ext_ml_checkpoint_storage_uri must start with one of the allowed prefixes (when any are configured).
void check_checkpoint_prefix(const ml::Requirements& req, const std::vector<std::string>& prefixes);

// The controller's pass: waiting jobs of queues with `backfill` get a
// reservation on the worker where they could start soonest (backfill_reservations.cpp).
// The backfill reservation held for a job, if any (why-waiting shows it).
std::optional<CapacityHold> backfill_hold_of(PreemptionStore& store, const std::string& job_id);

// ---- directives ----
// [{job_id, action: "preempt", grace_period_s (remaining), checkpoint, deadline, preempted_for}
//  | {job_id, action: "cancel" | "kill"}]
// Built from the marks WorkerRegistry::contact read with the worker's load (no Redis call).
nlohmann::json preemption_directives(const std::vector<PreemptionMarkView>& marks);

// ---- checkpoints (api/preemption_api.cpp) ----
class Checkpoints {
 public:
  // prefixes: --checkpoint-prefix, the storage URIs a checkpoint may name (none: any).
  Checkpoints(JobReads& jobs, JobStore& transitions, std::vector<std::string> prefixes)
      : jobs_(jobs), transitions_(transitions), prefixes_(std::move(prefixes)) {}
  // Validates the body and commits it atomically (checkpoint.lua); 409 when the job
  // is not active or (worker_id given) held by another worker. A body with
  // `state` is a durable-execution checkpoint: save_state.
  nlohmann::json commit(const std::string& id, const nlohmann::json& body);
  // A job's checkpoints (GET): the ML ones and its durable-execution state
  // (both shapes at once: `checkpoint` as ojs-durable-execution.md nests it, and its
  // members at the top level, as the conformance suite reads them); 404 when the job
  // is absent, outside the caller's tenant scope, or has no checkpoint of either kind.
  nlohmann::json read(const std::string& id);
  // ojs-durable-execution.md: saves `state` (any JSON value, at most 1 MiB
  // as compact text: 413) for a job that has not ended (409 once it has; with
  // `worker_id`, 409 unless that worker holds it running); each save overwrites and
  // increments `sequence`.
  nlohmann::json save_state(const std::string& id, const nlohmann::json& body);
  // Deletes the job's durable checkpoint (200 whether or not it had one).
  nlohmann::json delete_state(const std::string& id);

 private:
  JobReads& jobs_;
  JobStore& transitions_;
  std::vector<std::string> prefixes_;
};

// ---- background ----
// Sends an active job back to its queue without consuming its attempt (NACK
// requeue); the jobs service provides it, so preemption does not depend on it.
using RequeueJob = std::function<void(const std::string& job_id, const nlohmann::json& error)>;

class PreemptionController {
 public:
  PreemptionController(JobReads& jobs, QueueDirectory& queues, PreemptionStore& marks, CohortStore& cohorts, RequeueJob requeue, Scheduler& scheduler, DiagnosisLog& diagnosis,
                       WorkerRegistry& workers, GangStore& gangs, const BrokerConfig& config);
  // Called by the maintenance loop on every pass of every broker: reclaims jobs
  // whose preemption deadline passed (idempotent); at --preemption-interval-ms
  // renews the leader lease and, when leading, escalates, expires reservation
  // waits and preempts.
  void run_once();
  bool leading() const { return leading_; }

  int reclaim_overdue(const std::string& queue);
  int escalate(const std::string& queue);
  int expire_reservation_waits(const std::string& queue);
  int preempt();  // one pass over every queue's waiting heads; returns preemptions started
  int reserve_for_backfill();  // one pass; returns reservations made
  // Cohorts (cohort_balance.cpp): sets each member's share of the cohort's GPUs and
  // preempts borrowing jobs of a member holding more than its share; returns the
  // preemptions started.
  int balance_cohorts(const std::vector<std::string>& queues);
  long long waiting_gpus(const std::string& queue);  // GPUs its available GPU jobs ask for

 private:
  bool renew_lease();
  // Workers that are running, seen within --worker-dead-after-ms, with capabilities (running_jobs.hpp).
  std::vector<LiveWorker> live_workers();
  std::vector<RunningJob> running_on(const std::string& worker_id);
  // The priority class rank of a class's waiting head {job id, ready-set score}: the
  // score's band under the `priority` policy, else the job's rank_base (-1: it is gone).
  int head_class_rank(const std::string& queue, const std::pair<std::string, double>& head);
  // The queue's active jobs charged to its GPU budget (on any worker).
  // members: when given, the members of elastic gangs that may leave (or are leaving)
  // one at a time (gang_members_charged).
  std::vector<RunningJob> charged_in(const std::string& queue, std::vector<RunningJob>* members = nullptr);
  QueueBudget budget_of(const std::string& queue);
  // Marks victims (one preempt.lua per queue and worker, all or none within it; a
  // member leaving an elastic gang through gang_leave.lua, which refuses to take the
  // gang below its minimum); the latest deadline, or nullopt when a victim changed
  // meanwhile.
  std::optional<std::int64_t> mark(const std::string& preemptor, const std::vector<RunningJob>& victims);
  // Marks the victims on `worker_id` (mark), then holds the capacity they free for the
  // preemptor until they are gone plus --capacity-hold-ms; false when a victim changed.
  struct HoldFor {
    std::string job_id, queue, class_id;
    int rank = 0;
    int gpus = 0;  // what the preemptor needs there: the victims' GPUs and the free ones counted on
  };
  bool mark_and_hold(const std::string& worker_id, const HoldFor& preemptor, const std::vector<RunningJob>& victims);
  // Capacity preemption for a waiting gang (gang_preemption.cpp): frees one worker per
  // member it still needs (plan_gang_capacity_preemption) and holds each for it (the
  // workers join `held_workers`); when enough workers take a member already, the
  // budget may be the obstacle (preempt_for_budget, one member's charge). `sites[i]`
  // is `workers[i]`. True when preemption started.
  // An elastic gang that lower-class work cannot make room for takes members of
  // running elastic gangs of its class rank above their share (plan_share_shrink;
  // `shares`: the tenants' weights under fair's tenant order).
  bool preempt_for_gang(const std::string& queue, const std::string& class_id, const std::string& preemptor, int rank,
                        const ml::Requirements& req, const std::vector<const LiveWorker*>& workers,
                        const std::vector<PreemptionSite>& sites, const VictimFilter& allowed,
                        const std::optional<FairShares>& shares, std::set<std::string>& held_workers);
  // The workers an elastic gang waiting with `held` members gets freed by members of
  // equal elastic gangs leaving, each gang keeping its share (spare_above_share), and
  // by lower-class work (`allowed`); empty when they do not free `needed`.
  GangCapacityPlan plan_share_shrink(const WaitingElasticGang& waiting, const ml::Requirements& req, int needed,
                                     const std::vector<PreemptionSite>& open,
                                     const std::function<std::vector<RunningJob>(std::size_t)>& running_of,
                                     const VictimFilter& allowed, const std::optional<FairShares>& shares);
  // Budget-driven preemption: the job would fit a worker but its queue's budget
  // is held by lower-class preemptible jobs.
  // charge: what the preemptor would be charged on the worker it fits (its GPUs and
  // their memory, or its TPU chips).
  // allowed: the tenant order's share rule (capacity_plan.hpp fair_victims).
  bool preempt_for_budget(const std::string& queue, const std::string& preemptor, int rank, const BudgetCharge& charge,
                          const VictimFilter& allowed = {});

  JobReads& jobs_;
  QueueDirectory& queues_;
  PreemptionStore& marks_;  // marks, escalation, reservations, holds, the controller lease
  CohortStore& cohorts_;
  RequeueJob requeue_;
  Scheduler& scheduler_;
  DiagnosisLog& diagnosis_;
  WorkerRegistry& workers_;
  GangStore& gangs_;  // members leaving elastic gangs
  const BrokerConfig& config_;
  std::string owner_;
  std::int64_t next_tick_ms_ = 0;
  bool leading_ = false;
};

}  // namespace ojs::broker
