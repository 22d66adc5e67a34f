// When running jobs end: a declared end moved by how the queue's jobs kept to theirs
// (Overruns), the end a job's reported progress points to (progress_end), and the late
// snapshot the start_at_p90 run takes (late_ends) with its calibration (LateCalibration).
#include <algorithm>
#include <cmath>

#include "broker/estimate/forecast.hpp"

namespace ojs::broker::estimate {

namespace {

// Learned ratios as the rules read them: finite, above 0 (or at least 0), sorted.
std::vector<double> sorted_ratios(std::vector<double> ratios, bool above_zero) {
  std::erase_if(ratios, [&](double r) { return !std::isfinite(r) || (above_zero ? !(r > 0) : !(r >= 0)); });
  std::sort(ratios.begin(), ratios.end());
  return ratios;
}

}  // namespace

Overruns Overruns::of(std::vector<double> ratios) { return {sorted_ratios(std::move(ratios), true)}; }

std::int64_t Overruns::end(std::int64_t started_ms, std::int64_t declared_ms, std::int64_t now_ms, double quantile) const {
  const auto at = [&](double ratio) { return started_ms + std::llround(ratio * static_cast<double>(declared_ms)); };
  if (ratios.empty()) return std::max(started_ms + declared_ms, now_ms);
  // The ratios are sorted, so are the ends: those after now are a suffix.
  const auto first = std::upper_bound(ratios.begin(), ratios.end(), now_ms, [&](std::int64_t now, double r) { return now < at(r); });
  if (first == ratios.end()) return now_ms;
  return at(at_quantile(first, ratios.end(), quantile));
}

std::int64_t Overruns::run(std::int64_t declared_ms, double quantile) const {
  if (ratios.empty()) return declared_ms;
  return std::max<std::int64_t>(1, std::llround(at_quantile(ratios, quantile) * static_cast<double>(declared_ms)));
}

std::optional<double> started_vs_late(std::int64_t asked_ms, std::int64_t late_ms, std::int64_t started_ms) {
  if (late_ms - asked_ms < kCalibrationMinWaitMs) return std::nullopt;
  return static_cast<double>(started_ms - asked_ms) / static_cast<double>(late_ms - asked_ms);
}

LateCalibration LateCalibration::of(std::vector<double> ratios) { return {sorted_ratios(std::move(ratios), false)}; }

std::int64_t LateCalibration::widen(std::int64_t now_ms, std::int64_t late_ms) const {
  if (ratios.size() < kMinCalibration || late_ms <= now_ms) return late_ms;
  const double factor = at_quantile(ratios, kLateQuantile);
  if (!(factor > 1)) return late_ms;
  return now_ms + std::llround(static_cast<double>(late_ms - now_ms) * factor);
}

Snapshot late_ends(const Snapshot& s) {
  Snapshot late = s;
  for (auto& w : late.workers)
    for (auto& r : w.running)
      if (r.late_end_ms) r.job.declared_end_ms = r.late_end_ms;
  for (auto& w : late.waiting)
    if (w.late_run_ms) w.run_ms = w.late_run_ms;
  return late;
}

bool has_spread(const Snapshot& s) {
  for (const auto& w : s.workers)
    for (const auto& r : w.running)
      if (r.late_end_ms && r.late_end_ms != r.job.declared_end_ms) return true;
  return std::any_of(s.waiting.begin(), s.waiting.end(), [](const Waiting& w) { return w.late_run_ms && w.late_run_ms != w.run_ms; });
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
