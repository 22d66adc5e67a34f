#include "broker/estimate/never_fits.hpp"

#include <set>

#include "ojs/ml/predicates.hpp"

namespace ojs::broker::estimate {

namespace {

// The GPUs the tenant's quota allows at most (the "*" entry for a tenant not named).
std::optional<long long> tenant_limit(const Limits& l, const std::string& tenant) {
  if (tenant.empty()) return std::nullopt;
  auto it = l.tenants.limits.find(tenant);
  if (it == l.tenants.limits.end()) it = l.tenants.limits.find("*");
  if (it == l.tenants.limits.end()) return std::nullopt;
  return it->second;
}

}  // namespace

std::optional<std::string> never_fits(const Snapshot& s, const Waiting& job) {
  const ml::Requirements& req = *job.req;
  const int members = members_of(req);
  const long long gpus = static_cast<long long>(req.gpu_count()) * members;
  const auto& b = s.limits.budget;
  if (gpus > 0 && b.max_gpus && gpus > *b.max_gpus)
    return "it needs " + std::to_string(gpus) + " GPUs and the queue's max_total_gpus is " + std::to_string(*b.max_gpus);
  if (const auto chips = charged_tpu_chips(req); chips > 0 && b.max_tpu_chips && chips > *b.max_tpu_chips)
    return "it needs " + std::to_string(chips) + " TPU chips and the queue's max_total_tpu_chips is " + std::to_string(*b.max_tpu_chips);
  if (const auto limit = tenant_limit(s.limits, job.tenant); gpus > 0 && limit && gpus > *limit)
    return "it needs " + std::to_string(gpus) + " GPUs and tenant " + job.tenant + "'s quota is " + std::to_string(*limit);
  if (s.workers.empty()) return "no live worker serves the queue";
  int fitting = 0;
  std::set<std::string> why;
  for (const auto& w : s.workers) {
    const auto j = ml::judge_static(req, &w.caps);
    if (j.eligible()) {
      ++fitting;
    } else if (why.size() < 3) {
      why.insert(j.refusals.front().summary.empty() ? j.refusals.front().reason : j.refusals.front().summary);
    }
  }
  if (fitting >= members) return std::nullopt;
  std::string text = "no live worker serving the queue could ever take it (" + std::to_string(s.workers.size()) + " seen";
  if (members > 1) text += ", " + std::to_string(fitting) + " fit a member of a gang of " + std::to_string(members);
  for (const auto& w : why) text += "; " + w;
  return text + ")";
}

}  // namespace ojs::broker::estimate
