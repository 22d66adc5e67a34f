// The capacity preemption rule (pure): see capacity_plan.hpp.
#include "broker/preemption/capacity_plan.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "ojs/ml/predicates.hpp"

namespace ojs::broker {

namespace {

// Whether the job fits the site once the jobs already preempting there are gone
// (`load`: the site's load without them).
bool fits_once_leaving_go(const ml::Requirements& req, const PreemptionSite& site, const std::vector<RunningJob>& running,
                          const ml::AssignmentOptions& assignment, ml::WorkerLoad& load) {
  std::set<std::string> leaving;
  for (const auto& r : running)
    if (r.preempting) leaving.insert(r.job_id);
  load = load_without(running, leaving, site.drained);
  return ml::fits(req, site.caps, load, assignment);
}

}  // namespace

bool may_preempt(const ml::Requirements& req, int rank) { return rank > 0 && req.scheduling.reservation_id.empty(); }

CapacityPlan plan_capacity_preemption(const ml::Requirements& req, int rank, const std::vector<PreemptionSite>& sites,
                                      const std::function<std::vector<RunningJob>(std::size_t)>& running_of,
                                      const ml::AssignmentOptions& assignment, const VictimFilter& allowed) {
  CapacityPlan plan;
  std::optional<VictimChoice> best;
  for (std::size_t i = 0; i < sites.size(); ++i) {
    const auto& site = sites[i];
    if (!site.caps || !ml::fits_static(req, site.caps)) continue;
    const auto running = running_of(i);
    ml::WorkerLoad load;
    if (fits_once_leaving_go(req, site, running, assignment, load)) {  // a worker can take it (or soon will): no preemption
      plan.fits_on = i;
      plan.fit_load = std::move(load);
      plan.worker.reset();
      return plan;
    }
    auto choice = choose_victims(req, rank, *site.caps, running, assignment, site.drained, allowed);
    if (choice && (!best || cheaper(*choice, *best))) {
      best = std::move(choice);
      plan.worker = i;
    }
  }
  if (best) plan.choice = std::move(*best);
  return plan;
}

GangCapacityPlan plan_gang_capacity_preemption(const ml::Requirements& req, int rank, int needed,
                                               const std::vector<PreemptionSite>& sites,
                                               const std::function<std::vector<RunningJob>(std::size_t)>& running_of,
                                               const ml::AssignmentOptions& assignment, const VictimFilter& allowed) {
  GangCapacityPlan plan;
  std::vector<std::pair<std::size_t, VictimChoice>> options;
  for (std::size_t i = 0; i < sites.size(); ++i) {
    const auto& site = sites[i];
    if (!site.caps || !ml::fits_static(req, site.caps)) continue;
    const auto running = running_of(i);
    ml::WorkerLoad load;
    if (fits_once_leaving_go(req, site, running, assignment, load)) {
      ++plan.fitting;
      continue;
    }
    if (auto choice = choose_victims(req, rank, *site.caps, running, assignment, site.drained, allowed))
      options.emplace_back(i, std::move(*choice));
  }
  if (plan.fitting >= needed) return plan;
  std::stable_sort(options.begin(), options.end(), [](const auto& a, const auto& b) { return cheaper(a.second, b.second); });
  std::map<std::string, int> taken;  // members leaving each elastic gang in this plan
  for (auto& option : options) {
    if (plan.fitting + static_cast<int>(plan.freed.size()) >= needed) break;
    if (within_gang_spare(option.second.victims, taken)) plan.freed.push_back(std::move(option));
  }
  if (plan.fitting + static_cast<int>(plan.freed.size()) < needed) plan.freed.clear();
  return plan;
}

bool fair_share_allows(const FairShares& shares, const std::string& queue, const std::string& tenant, int gpus, const RunningJob& victim) {
  if (victim.queue != queue || victim.tenant == tenant) return true;
  if (tenant.empty() || victim.tenant.empty()) return false;
  // Below its share: of the terms the claim adds (decayed use, held now), its mean
  // fraction against its weight's fraction among the tenants with use and the two.
  const bool any_used = std::any_of(shares.tenants.begin(), shares.tenants.end(), [](const auto& t) { return t.second.used > 0; });
  const int terms = (any_used ? 1 : 0) + (shares.queue_held > 0 ? 1 : 0);
  double weights = 0;
  for (const auto& [name, t] : shares.tenants)
    if (t.used > 0 || t.held > 0 || name == tenant || name == victim.tenant) weights += t.weight;
  for (const auto& name : {tenant, victim.tenant})
    if (!shares.tenants.count(name)) weights += shares.default_weight;
  const double weight = shares.weight(tenant);
  const double fraction = terms > 0 ? shares.share(tenant) * weight / terms : 0;
  if (!(fraction < weight / weights)) return false;
  // At or below the victim's tenant once the GPUs moved (GPU use only: another
  // resource's share does not move with them).
  const double moved = shares.resource == 1 ? gpus : 0, freed = shares.resource == 1 ? victim.gpus : 0;
  return shares.share(tenant, moved, moved - freed) <= shares.share(victim.tenant, -freed, moved - freed);
}

VictimFilter fair_victims(const std::optional<FairShares>& shares, const std::string& queue, const std::string& tenant, int gpus) {
  if (!shares) return {};
  return [shares = *shares, queue, tenant, gpus](const RunningJob& v) { return fair_share_allows(shares, queue, tenant, gpus, v); };
}

std::int64_t victims_gone_by(const std::vector<RunningJob>& victims, std::int64_t now_ms) {
  std::int64_t last = now_ms;
  for (const auto& v : victims) last = std::max(last, now_ms + static_cast<std::int64_t>(v.grace_period_s) * 1000);
  return last;
}

}  // namespace ojs::broker
