// The priority score of a ready set, the one definition of the rule (the Lua
// scripts receive kBand as ARGV; escalation gets its new base from here).
// score = band * 2^40 + seq, lower is served first: band orders priority class
// (reserved, on-demand, spot) then OJS priority (100 .. -100); seq is FIFO.
#pragma once
#include <cmath>
#include <string>

namespace ojs::broker {

inline constexpr double kScoreBand = 1099511627776.0;  // 2^40: room for the FIFO sequence below a band
inline constexpr int kPrioritiesPerClass = 201;        // OJS priority -100 .. 100

// The band part of a score: class rank (spot 0, on-demand 1, reserved 2) and priority.
inline double rank_base(int priority_class_rank, int priority) {
  const int band = (2 - priority_class_rank) * kPrioritiesPerClass + (100 - priority);
  return band * kScoreBand;
}

// Class rank (spot 0, on-demand 1, reserved 2) of a score or rank base.
inline int class_rank_of_score(double score) {
  const auto band = static_cast<long long>(std::floor(score / kScoreBand));
  return 2 - static_cast<int>(band / kPrioritiesPerClass);
}

// kScoreBand as the scripts receive it.
inline const std::string& score_band_arg() {
  static const std::string text = "1099511627776";
  return text;
}

}  // namespace ojs::broker
