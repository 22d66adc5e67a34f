// When running jobs end: a declared end moved by how the queue's jobs kept to theirs
// (Overruns), and the end a job's reported progress points to (progress_end).
#include <algorithm>
#include <cmath>

#include "broker/estimate/forecast.hpp"

namespace ojs::broker::estimate {

Overruns Overruns::of(std::vector<double> ratios) {
  std::erase_if(ratios, [](double r) { return !(r > 0) || !std::isfinite(r); });
  std::sort(ratios.begin(), ratios.end());
  return {std::move(ratios)};
}

std::int64_t Overruns::end(std::int64_t started_ms, std::int64_t declared_ms, std::int64_t now_ms) const {
  const auto at = [&](double ratio) { return started_ms + std::llround(ratio * static_cast<double>(declared_ms)); };
  if (ratios.empty()) return std::max(started_ms + declared_ms, now_ms);
  // The ratios are sorted, so are the ends: those after now are a suffix.
  const auto first = std::upper_bound(ratios.begin(), ratios.end(), now_ms, [&](std::int64_t now, double r) { return now < at(r); });
  if (first == ratios.end()) return now_ms;
  return at(*(first + (ratios.end() - first) / 2));
}

std::int64_t Overruns::run(std::int64_t declared_ms) const {
  if (ratios.empty()) return declared_ms;
  return std::max<std::int64_t>(1, std::llround(ratios[ratios.size() / 2] * static_cast<double>(declared_ms)));
}

std::optional<std::int64_t> progress_end(std::int64_t started_ms, const Progress& p, std::int64_t now_ms) {
  if (!(p.fraction > 0) || !(p.fraction < 1) || p.reported_ms < started_ms) return std::nullopt;
  const bool has_base = p.base_ms > 0 && p.base_ms >= started_ms && p.base_ms <= p.reported_ms && p.base_fraction > 0;
  if (has_base && p.reported_ms > p.base_ms && p.fraction - p.base_fraction >= kPaceSpan) {
    const double ms_per_unit = static_cast<double>(p.reported_ms - p.base_ms) / (p.fraction - p.base_fraction);
    return std::max<std::int64_t>(p.reported_ms + std::llround((1 - p.fraction) * ms_per_unit), now_ms);
  }
  if (p.resumed || !(p.fraction >= kProgressTrusted)) return std::nullopt;
  const std::int64_t end = started_ms + std::llround(static_cast<double>(p.reported_ms - started_ms) / p.fraction);
  return std::max(end, now_ms);
}

}  // namespace ojs::broker::estimate
