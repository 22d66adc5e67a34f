// The tenants' parts of a queue's use under `policy: fair`, as the claim
// weighs them (scheduling/fair_order.cpp fair_shares_from computes them for the
// claim, capacity preemption and the start estimate): what capacity preemption
// needs to tell whether a move of GPUs between tenants is fair
// (broker/preemption/capacity_plan.hpp fair_share_allows).
#pragma once
#include <map>
#include <string>

namespace ojs::broker {

struct FairShares {
  struct Tenant {
    double weight = 1;
    double used = 0;  // fraction of the queue's decayed use of `resource`
    double held = 0;  // amount of `resource` held now
  };
  int resource = 0;         // 1 GPUs, 2 CPU cores (a queue without GPU jobs), 0 nothing used or held yet
  double queue_held = 0;    // of `resource`, held by the queue's jobs now
  double default_weight = 1;
  bool by_tenant = true;  // the queue's fair order: tenant (lowest share first), or class (class first, share within)
  std::map<std::string, Tenant> tenants;  // every tenant with a weight or a use

  // The claim's share of `tenant` (its fraction of the decayed use, plus its fraction
  // of what is held now, over its weight; written once, here) once it
  // holds `delta` more of `resource` and the queue `queue_delta` more.
  // A tenant's weight: its own, else the queue's default.
  double weight(const std::string& tenant) const {
    const auto it = tenants.find(tenant);
    return it == tenants.end() ? default_weight : it->second.weight;
  }
  double share(const std::string& tenant, double delta = 0, double queue_delta = 0) const {
    const auto it = tenants.find(tenant);
    const Tenant t = it == tenants.end() ? Tenant{default_weight, 0, 0} : it->second;
    const double q_held = queue_held + queue_delta;
    return (t.used + (q_held > 0 ? (t.held + delta) / q_held : 0)) / t.weight;
  }
};

}  // namespace ojs::broker
