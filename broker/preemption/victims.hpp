// Victim selection for preemption: pure code (no Redis), unit-tested in
// tests/unit/broker/victims_test.cpp. The controller (capacity_preemption.cpp, budget_preemption.cpp) feeds it
// what runs on one worker and asks whether, and at what cost, a waiting
// higher-class job could run there.
#pragma once
#include <cstdint>
#include <optional>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "broker/scheduling/queue_budget.hpp"
#include "broker/scheduling/running_job.hpp"
#include "ojs/ml/capabilities.hpp"
#include "ojs/ml/predicates.hpp"
#include "ojs/ml/requirements.hpp"
#include "ojs/ml/worker_load.hpp"

namespace ojs::broker {

struct VictimChoice {
  std::vector<RunningJob> victims;  // minimal set, least progress lost first
  std::int64_t lost_ms = 0;         // sum over victims
  ml::Judgement fit;                // the preemptor's judgement once they are gone (devices)
};

// Whether a running job may be a victim beyond the class rule (empty: any).
using VictimFilter = std::function<bool(const RunningJob&)>;

// The worker's load without the jobs in `removed` (ids), built as FETCH builds the
// live one: each job's labels and anti-affinity, its devices held (shared devices
// counted), and the devices an admin drained.
ml::WorkerLoad load_without(const std::vector<RunningJob>& running, const std::set<std::string>& removed,
                            const std::vector<int>& drained = {});

// Victims (lower class than `preemptor_rank`, preemptible, not already
// preempting) whose removal makes the preemptor fit on this worker, checked with
// ml::judge on the hypothetical load. Candidates are taken members leaving an
// elastic gang first (the gang shrinks instead of stopping), then least progress
// lost first, until the job fits; then any that turn out unnecessary are dropped.
// nullopt when the job already fits (nothing to preempt: it only has to be
// fetched, or jobs already preempting free enough), or when it would not fit
// even without every candidate (never preempt for nothing). `allowed`:
// only candidates it accepts (the tenant order's share rule).
std::optional<VictimChoice> choose_victims(const ml::Requirements& preemptor, int preemptor_rank,
                                           const ml::Capabilities& caps, const std::vector<RunningJob>& running,
                                           const ml::AssignmentOptions& assignment = {}, const std::vector<int>& drained = {},
                                           const VictimFilter& allowed = {});

// Victims among the jobs charged to a queue's budget (`running`: the queue's
// active jobs, any worker; gpus = GPUs charged) whose release lets a waiting
// higher-class job of `preemptor_gpus` GPUs fit the budget. Same rules as
// choose_victims: lower class, preemptible, not already preempting, least
// progress lost first, minimal. nullopt when the budget already allows the job
// or no choice of victims makes it fit. preemptor_mem_mb: the GPU memory it would
// be charged (a GPU-memory budget; 0 when none is known).
std::optional<VictimChoice> choose_budget_victims(int preemptor_gpus, int preemptor_rank, const QueueBudget& budget,
                                                  const std::vector<RunningJob>& running, long long preemptor_mem_mb = 0,
                                                  const VictimFilter& allowed = {});
// The same for a preemptor's whole charge: a TPU job (tpu_chips, no GPUs) frees
// TPU chips of the budget (max_total_tpu_chips), taken from charged TPU jobs.
std::optional<VictimChoice> choose_budget_victims(const BudgetCharge& preemptor, int preemptor_rank, const QueueBudget& budget,
                                                  const std::vector<RunningJob>& running, const VictimFilter& allowed = {});

// Members leaving elastic gangs (`members`: gang_members_charged of the queue's
// gangs) whose GPUs, given back, let the preemptor fit the budget: lower class,
// preemptible and `allowed` as choose_budget_victims, least progress lost first, no
// gang below its minimum (within_gang_spare); whole jobs already preempting
// (`charged`) and members already leaving count as freed. A leaving member frees
// GPUs (and GPU memory), not a GPU job: the gang runs on. nullopt when they alone do
// not free enough, or the budget allows the preemptor already.
// What the jobs already preempting (`charged`) and the members already leaving
// (`members`) give back to a queue's budget once gone: a member its GPUs, not a job.
BudgetCharge freed_on_the_way_out(const std::vector<RunningJob>& charged, const std::vector<RunningJob>& members);
std::optional<VictimChoice> choose_budget_leavers(const BudgetCharge& preemptor, int preemptor_rank, const QueueBudget& budget,
                                                  const std::vector<RunningJob>& charged, const std::vector<RunningJob>& members,
                                                  const VictimFilter& allowed = {});

// Budget preemption's choice: nothing when what is on its way out already (jobs
// preempting, members leaving: a member told to leave in an earlier pass) frees
// enough; else members leaving elastic gangs (choose_budget_leavers), and whole jobs
// (choose_budget_victims) only when those are not enough.
std::optional<VictimChoice> choose_budget_preemption(const BudgetCharge& preemptor, int preemptor_rank, const QueueBudget& budget,
                                                     const std::vector<RunningJob>& charged, const std::vector<RunningJob>& members,
                                                     const VictimFilter& allowed = {});

// Victims among a cohort member's charged jobs (`running`) that give back `gpus` GPUs
// of its budget to the cohort: jobs placed by borrowing first (whatever their
// class or preemptible flag: borrowed GPUs are lent, not given), then preemptible
// ones, lower class first; within each, least progress lost first. Jobs already
// preempting are not chosen (the caller counts what they free). nullopt when the
// candidates cannot free that much.
std::optional<VictimChoice> choose_reclaim_victims(long long gpus, const std::vector<RunningJob>& running);

// Of several workers' choices, the one losing the least progress (then fewest victims).
bool cheaper(const VictimChoice& a, const VictimChoice& b);

// Whether victims may be taken together: no elastic gang loses more members than it
// has to spare (RunningJob::gang_spare), counting `taken` (gang job id -> members
// already chosen in this pass), which it updates when they may.
bool within_gang_spare(const std::vector<RunningJob>& victims, std::map<std::string, int>& taken);

}  // namespace ojs::broker
