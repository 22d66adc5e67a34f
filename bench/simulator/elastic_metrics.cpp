#include "simulator/elastic_metrics.hpp"

#include <algorithm>
#include <iterator>

namespace ojs::bench {

void JobsInSystem::change(double t, int delta) {
  // Changes come in time order (the simulation's clock): the last step extends to t.
  const int before = count_from_.empty() ? 0 : std::prev(count_from_.end())->second;
  const double at = integral_to(t);
  count_from_[t] = before + delta;
  integral_at_[t] = at;
}

double JobsInSystem::integral_to(double t) const {
  auto it = count_from_.upper_bound(t);
  if (it == count_from_.begin()) return 0;
  --it;
  return integral_at_.at(it->first) + it->second * (t - it->first);
}

double JobsInSystem::mean(double from, double to) const {
  if (to <= from) {
    auto it = count_from_.upper_bound(from);
    return it == count_from_.begin() ? 0 : std::prev(it)->second;
  }
  return (integral_to(to) - integral_to(from)) / (to - from);
}

double independent_run_s(const ElasticJob& job, int nodes, double jobs_in_system) {
  const double share = nodes / std::max(1.0, jobs_in_system);
  return job.run_s(std::clamp(share, static_cast<double>(job.min_nodes), static_cast<double>(job.max_nodes)));
}

void completion_figures(const std::vector<ElasticJob>& trace, const std::vector<double>& finish_s, int nodes,
                        const JobsInSystem& in_system, ElasticResult& result) {
  std::vector<double> jct, rho;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    if (finish_s[i] < 0) continue;
    const auto& j = trace[i];
    const double shared = finish_s[i] - j.arrival_s;
    jct.push_back(shared);
    rho.push_back(shared / independent_run_s(j, nodes, in_system.mean(j.arrival_s, finish_s[i])));
  }
  result.finished = static_cast<int>(jct.size());
  result.jct_s = percentiles(jct);
  // Above 1 by more than the float noise of a job that ran exactly its fair slice.
  const auto above = std::count_if(rho.begin(), rho.end(), [](double r) { return r > 1.0 + 1e-9; });
  result.share_rho_above_1 = rho.empty() ? 0 : static_cast<double>(above) / static_cast<double>(rho.size());
  const auto r = percentiles(rho);
  result.max_rho = r.max;
  result.mean_rho = r.mean;
}

}  // namespace ojs::bench
