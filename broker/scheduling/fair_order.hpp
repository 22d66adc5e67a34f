// The `fair` queue policy's order, in C++ (docs/matching.md#fair-share):
// the tenants' shares from their use (as the maintenance pass last folded it, plus
// what they hold now) and, per class, the job the order offers. decide_claim ranks
// the classes' offers; the commit (claim.lua) only records the held use.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "broker/store/claim_store.hpp"
#include "broker/store/fair_shares.hpp"
#include "broker/store/preemption_store.hpp"

namespace ojs::broker {

// The config's fair_tenants (queue_config.cpp fairness_for_claim): band base, named
// slots, weights, order.
struct FairLayout {
  long long base = 4096;
  int slots = 1;
  double default_weight = 1;
  bool by_tenant = true;  // order "tenant" (lowest share first), else "class"
  std::map<std::string, double> weights;
  double weight(const std::string& tenant) const;
};
FairLayout fair_layout_from(const std::string& json);

// The priority (class) band of a score under the fair layout, whatever its tenant
// slot; -1 for a score under an earlier policy.
int fair_class_band(const FairLayout& layout, double score);

// A name's use as the fair order weighs it at `now_ms`, from its two usage-hash
// values: resource-seconds of ended and running attempts, decayed (GPUs, CPU cores),
// and the amounts its running jobs hold.
struct FairUse {
  double used[2] = {0, 0};
  double held[2] = {0, 0};
};
FairUse fair_use_of(const FairUsage::Usage& u, std::int64_t now_ms, std::int64_t half_life_ms);

// The usage hash's two values of each name ('*': the queue) brought to `now_ms`
// with the half-life (_lib_accounting.lua's layout: decayed 'at u1..u4', held
// 'n1..n4 at r1 r2'), as the shares preemption and the claim weigh.
FairShares fair_shares_from(const FairLayout& layout, const std::vector<FairUsage::Usage>& usage, std::int64_t now_ms,
                            std::int64_t half_life_ms);
std::int64_t fair_half_life_ms(const std::string& configured);  // "" = an hour

// The shares capacity preemption and the start estimate weigh, from a read of the
// queue's use (PreemptionStore::fair_usage) at its time: nullopt when the queue is
// not fair or, unless `any_order`, its order is not the tenant order (preemption's
// share rule weighs tenants only under it; the estimate orders by either).
std::optional<FairShares> fair_shares_of(const std::optional<PreemptionStore::FairUsageRead>& read, bool any_order);

// The share the order compares: 0 for a job without a tenant (it is not shared).
double fair_share_of(const FairShares& shares, const std::string& tenant);

// A class's ready set as the candidates' listing reads it: up to `n` jobs with
// low <= score < high, in score order (tenant, cpus and enqueued_ms filled).
using ReadyRange = std::function<std::vector<FairCandidate>(double low, double high, int n)>;

// The candidates a fair queue's claim is decided over for one class, listed as
// fair_candidates.lua lists them from its ready set (the walk is written out
// there): the first `depth` jobs of each tenant slot, at the first class band
// the slot is met (order "tenant") or in every class band from the head's on
// (order "class"); a head scored under an earlier policy lists the first 32 jobs,
// class band -1. The start estimate's run lists its jobs with it, so its decision
// sees what FETCH's does; tests/store/claim_commit_test.cpp holds the two to one
// listing.
std::vector<FairCandidate> fair_candidates_of(const ReadyRange& range, const FairLayout& layout, int depth);

// A class's offer under the fair order: the first job (not `taken`) of its walk
// within its tenant's quota, ranked (tenant order) share, class band, seq or (class
// order) class band, share, seq; seq is the job's place in its band. Jobs scored
// under an earlier policy come first (share and band -1, seq its score).
struct FairOffer {
  const FairCandidate* job = nullptr;
  double k1 = 0, k2 = 0, seq = 0;
  std::optional<BudgetBlock> first_block;  // why none: the first quota met
};
FairOffer fair_offer(const std::string& class_id, const std::vector<FairCandidate>& jobs, const FairLayout& layout,
                     const FairShares& shares, const TenantQuotaUse* quotas, int gpus, const std::vector<bool>& taken);

// A started job joins its tenant's held use (the share's resource: its GPUs, else its CPU cores).
void fair_hold(FairShares& shares, const std::string& tenant, int gpus, std::optional<double> cpus);
// `amount` of the share's resource added to what the tenant and the queue hold
// (negative: given back), the resource already chosen.
void fair_hold_amount(FairShares& shares, const std::string& tenant, double amount);

}  // namespace ojs::broker
