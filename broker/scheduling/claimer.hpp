// A claim, decided then committed: reads the snapshot (unless the caller has one,
// as FETCH's class walk does), decides in C++ (claim_decision.hpp), commits with
// claim.lua, and decides again on fresh reads when the commit passed over picks
// whose state had moved. FETCH and bench/simulator both claim through it.
// The same for gang classes: gang_decision.hpp decides, claim_gang.lua commits.
#pragma once
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "broker/scheduling/gang_decision.hpp"
#include "broker/store/claim_store.hpp"

namespace ojs::broker {

struct ClaimRequest {
  std::string queue;
  std::string worker_id;
  std::optional<std::int64_t> visibility_ms;
  std::int64_t default_visibility_ms = 0;
  int count = 1;
  std::string classes_version;
  bool record_held = false;  // list each claimed job in the worker's held set
};

// A worker fetching from a queue with gang classes.
struct GangClaimRequest {
  std::string queue;
  GangMemberInfo member;
  std::optional<std::int64_t> visibility_ms;
  std::int64_t default_visibility_ms = 0;
  std::set<std::string> elastic_classes;  // the eligible classes of elastic gangs: they share the nodes
  TenantShares tenant_shares;             // the queue's tenants' shares under `fair` (asked when tenants' gangs compete)
  bool kept_for_preemptor = false;        // a capacity hold keeps the worker: no running gang grows onto it
};

class Claimer {
 public:
  explicit Claimer(ClaimStore& store) : store_(store) {}
  // snapshot: the heads of (at least) the eligible classes, read by the caller.
  ClaimOutcome claim(const ClaimRequest& request, const std::vector<EligibleClass>& eligible,
                     const ClaimSnapshot* snapshot = nullptr);
  // eligible: the gang classes the worker may join (none: the commit still delivers a
  // started gang to a held member and answers one still waiting). rival: the first
  // waiting job outside gangs the worker could take, asked once at most (an elastic
  // gang grows only when it is ahead of it).
  GangClaim claim_gang(const GangClaimRequest& request, const std::vector<GangClass>& eligible, const RivalScore& rival = {});

 private:
  ClaimStore& store_;
};

}  // namespace ojs::broker
