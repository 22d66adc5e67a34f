// The capacity preemption rule as pure code (no Redis): which waiting job may
// preempt, and over the workers that could take it, whether it must (it fits none
// as things stand, jobs already preempting counted gone) and whom (the cheapest
// choose_victims among the workers). Called by the controller
// (capacity_preemption.cpp), the start estimate's forward run
// (broker/estimate/forecast.cpp) and bench/simulator, so all three preempt alike.
// Unit-tested in tests/unit/broker/victims_test.cpp.
//
// Fit is judged with ml::fits: the predicate table Scheduler::judge runs for FETCH
// (static, then dynamic; ConsumerVerdicts checks both agree), without the claim's
// fields (devices, bonus, locality cutoff) a plan does not use. FETCH's capacity
// guards are not applied here: the callers pass only workers no hold keeps, and
// the holds are what this plan creates.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "broker/preemption/victims.hpp"
#include "broker/store/fair_shares.hpp"

namespace ojs::broker {

// Whether a waiting job of priority class rank `rank` may preempt: above spot, and
// not bound to a reservation (a reservation holds its own capacity).
bool may_preempt(const ml::Requirements& req, int rank);

// A worker the pass may free GPUs on, as the caller sees it (leave out those that
// do not serve the queue and those already held for another preemptor).
struct PreemptionSite {
  const ml::Capabilities* caps = nullptr;
  std::vector<int> drained;  // devices an admin drained
};

struct CapacityPlan {
  // A worker that takes the job as things stand, or once jobs already preempting
  // leave: nothing is preempted (it only has to be fetched, or to wait for them).
  std::optional<std::size_t> fits_on;
  ml::WorkerLoad fit_load;  // that worker's load without the leaving jobs
  // Else the worker whose victims lose the least progress (cheaper()), and whom.
  std::optional<std::size_t> worker;
  VictimChoice choice;
};

// The pass's decision for one waiting class head of rank `rank`, over `sites` in the
// fleet's order. `running_of(i)`: what runs on site i, asked only for sites whose
// hardware fits the job (the controller reads it from Redis).
// `allowed`: the victims the queue's fair order lets it take (fair_victims).
CapacityPlan plan_capacity_preemption(const ml::Requirements& req, int rank, const std::vector<PreemptionSite>& sites,
                                      const std::function<std::vector<RunningJob>(std::size_t)>& running_of,
                                      const ml::AssignmentOptions& assignment = {}, const VictimFilter& allowed = {});

// The same for a waiting gang that still needs `needed` members placed: the workers
// that take a member as things stand count first; the rest are freed on the workers
// whose victims lose the least progress (one member per worker), never taking more
// members of an elastic gang than it has to spare (within_gang_spare). Empty `freed`
// when enough workers fit already, or when not enough can be freed (never preempt for
// a gang that still could not start).
struct GangCapacityPlan {
  int fitting = 0;                                        // workers that take a member now
  std::vector<std::pair<std::size_t, VictimChoice>> freed;  // site index, its victims
};
GangCapacityPlan plan_gang_capacity_preemption(const ml::Requirements& req, int rank, int needed,
                                               const std::vector<PreemptionSite>& sites,
                                               const std::function<std::vector<RunningJob>(std::size_t)>& running_of,
                                               const ml::AssignmentOptions& assignment = {}, const VictimFilter& allowed = {});

// Fair-sharing preemption under the fair policy's tenant order (Kueue's
// LessThanOrEqualToFinalShare; docs/matching.md#fair-share). A job of `tenant` in
// `queue`, of `gpus` GPUs, may take as a victim a job of the same tenant (the class
// rule alone, as before), a job of another queue (whose weights are not this
// queue's), or a job of another tenant of the queue only when
//   - its tenant is below its share: its fraction of the queue's use (decayed use
//     plus held now, FairShares::share) is below its weight's
//     fraction of the weights of the tenants with use, and
//   - once the victim's GPUs are its own, its share is at or below the victim
//     tenant's: (use + held + gpus) / weight <= (use' + held' - victim gpus) / weight'.
// Jobs without a tenant are not shared: they take only one another.
bool fair_share_allows(const FairShares& shares, const std::string& queue, const std::string& tenant, int gpus, const RunningJob& victim);

// The VictimFilter of fair_share_allows; empty (any) without shares (another order or policy).
VictimFilter fair_victims(const std::optional<FairShares>& shares, const std::string& queue, const std::string& tenant, int gpus);

// When victims marked at `now_ms` are gone at the latest: the end of the longest
// grace period among them (the deadline PreemptionStore::mark sets).
std::int64_t victims_gone_by(const std::vector<RunningJob>& victims, std::int64_t now_ms);

}  // namespace ojs::broker
