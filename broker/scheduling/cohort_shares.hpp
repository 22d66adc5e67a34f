// Cohorts: queues that share their idle GPU budget (Kueue's cohorts, on our
// budgets). Each member keeps its nominal share (max_total_gpus) for its own jobs;
// what it does not need it lends, within its lending_limit, to members whose jobs
// wait beyond their own share, within their borrowing_limit. The share each member
// may hold now is its GPU limit in force (the claim commits against it); a member
// holding more than its share (a lender wants its GPUs back) is reclaimed by
// preemption of its borrowing jobs. Pure code, unit-tested; the controller's pass
// (broker/preemption/cohort_balance.cpp) reads the members and writes the shares.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace ojs::broker {

struct CohortMember {
  std::string queue;
  long long nominal = 0;                   // max_total_gpus
  std::optional<long long> borrowing_limit;  // none: any
  std::optional<long long> lending_limit;    // none: all of its idle share
  long long used = 0;      // GPUs its running jobs hold (the ledger)
  long long waiting = 0;   // GPUs its waiting GPU jobs ask for
  long long limit_now = 0; // the share in force (its nominal before any was set)
};

struct CohortShare {
  std::string queue;
  long long planned = 0;   // the share this pass aims at: nominal - lent + borrowed
  long long limit = 0;     // the share to write now (a rise waits until the GPUs are free)
  long long lent = 0;      // of its nominal share, given to others
  long long borrowed = 0;  // above its nominal share, taken from others
  long long reclaim = 0;   // GPUs it holds above its planned share: to preempt
};

// The cohort's shares. Invariant kept at every step, so that any number of brokers
// committing claims against the shares in force never let the cohort hold more than
// the sum of its nominal shares: the sum over members of max(limit, used) never
// exceeds that total. Lowering a share is always allowed (its extra jobs are
// reclaimed); raising one waits for the room, i.e. for the jobs being reclaimed to
// leave. Borrowing already granted is kept before new borrowing is granted; new
// borrowing is shared out one GPU at a time between the borrowers.
std::vector<CohortShare> cohort_shares(const std::vector<CohortMember>& members);

}  // namespace ojs::broker
