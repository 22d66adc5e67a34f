// Small statistics helpers shared by the load generator and the cluster simulator.
// (HdrHistogram is not packaged here; runs are bounded, so keeping every sample
// and sorting once is exact and cheap enough.)
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ojs::bench {

// Nearest-rank percentile (q in [0, 1]) of an ascending vector; 0 when empty.
template <class T>
double percentile_sorted(const std::vector<T>& sorted, double q) {
  if (sorted.empty()) return 0;
  const auto n = sorted.size();
  auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(n)));
  rank = std::clamp<std::size_t>(rank, 1, n);
  return static_cast<double>(sorted[rank - 1]);
}

struct Percentiles {
  std::size_t count = 0;
  double p50 = 0, p95 = 0, p99 = 0, p999 = 0, max = 0, mean = 0;
};

// Sorts `values` in place and summarises them (same unit as the input, times `scale`).
template <class T>
Percentiles percentiles(std::vector<T>& values, double scale = 1.0) {
  Percentiles p;
  std::sort(values.begin(), values.end());
  p.count = values.size();
  if (values.empty()) return p;
  double sum = 0;
  for (const auto& v : values) sum += static_cast<double>(v);
  p.mean = sum / static_cast<double>(values.size()) * scale;
  p.p50 = percentile_sorted(values, 0.50) * scale;
  p.p95 = percentile_sorted(values, 0.95) * scale;
  p.p99 = percentile_sorted(values, 0.99) * scale;
  p.p999 = percentile_sorted(values, 0.999) * scale;
  p.max = static_cast<double>(values.back()) * scale;
  return p;
}

}  // namespace ojs::bench
