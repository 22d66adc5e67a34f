// Which jobs a claim takes: the decision half of a FETCH's claim, made in C++ over
// a snapshot (ClaimSnapshot, and ReadyDetail when it must look past the heads);
// claim.lua only commits it, re-checking what must hold. Pure: no Redis, unit-tested
// in tests/unit/broker/claim_decision_test.cpp. The start estimate's forward run
// (broker/estimate/forecast.cpp) asks it which waiting job goes next, over the same
// snapshot built from its simulated state; tests/unit/broker/consumer_verdicts_test.cpp
// checks both pick the same job.
//
// The order is the queue's: the lowest (priority band, -bonus, score) first, over
// the heads of the classes the worker may take (bonus: the soft score, preferred
// affinity and model locality). A class is kept back when the queue's budget would
// pass a limit; past its head a class offers its first job within the job's
// tenant's GPU quota and, on GPUs held for a reservation, its first job declared to
// end before the reservation starts (EASY backfilling). Under `policy:
// fair` each class offers the job its fair order names (fair_order.hpp) and the
// classes compare by that order's keys, the soft score between.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "broker/store/claim_store.hpp"

namespace ojs::broker {

struct FairLayout;
struct FairShares;

struct ClaimDecisionInput {
  const ClaimSnapshot& snapshot;
  const std::vector<EligibleClass>& eligible;
  int want = 1;               // jobs to claim
  std::int64_t now_ms = 0;
  const ReadyDetail* detail = nullptr;  // the classes' first jobs, once read (ClaimPlan::needs_jobs)
  const FairDetail* fair = nullptr;     // a fair queue's candidates, once read (ClaimPlan::needs_fair)
  // The start estimate's run keeps a fair queue's layout and its tenants' shares
  // itself (its starts and ends move what they hold): given, they stand in for
  // the ones FETCH reads into `fair` (its layout JSON and raw usage).
  const FairLayout* fair_layout = nullptr;
  const FairShares* fair_shares = nullptr;
  // Whether each class's soft-score bonus orders it within its priority band. A
  // FETCH's bonus is this worker's score of the class. The start estimate decides
  // which job goes next before it judges any worker, so it has no bonus to weigh
  // and passes false: within a band, the older head first.
  bool by_bonus = true;
};

struct ClaimPlan {
  // In the order the commit tries them: `want` picks, then a few spares for picks
  // the commit finds gone. A pick without a job id takes its class's head.
  std::vector<CommitPick> picks;
  std::vector<BudgetBlock> blocked;  // classes kept back, and the limit that kept each
  // When non-empty, nothing is decided yet: read these classes' first `depth` jobs
  // (with their tenants and declared durations when with_fields) and decide again.
  std::vector<std::string> needs_jobs;
  int depth = 0;
  bool with_fields = false;
  bool needs_fair = false;  // read the fair order's candidates (FairDetail) and decide again
};

ClaimPlan decide_claim(const ClaimDecisionInput& in);

}  // namespace ojs::broker
