// The priority score of a ready set, the one definition of the rule (the Lua
// scripts use _lib.lua's score_pack / score_unpack, whose constants the loader
// checks against these; escalation gets its new base from here).
// score = band * 2^40 + seq, lower is served first: band orders priority class
// (reserved, on-demand, spot) then OJS priority (100 .. -100); seq is FIFO.
#pragma once
#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>

namespace ojs::broker {

inline constexpr double kScoreBand = 1099511627776.0;  // 2^40: room for the FIFO sequence below a band
inline constexpr long long kScoreBands = 8192;         // bands 0 .. 8191: every score below 2^53, exact as a double
inline constexpr int kPrioritiesPerClass = 201;        // OJS priority -100 .. 100

// A score taken apart: its band and its FIFO sequence number within the band.
struct ScoreParts {
  long long band = 0;
  long long seq = 0;
};

// band * 2^40 + seq; std::out_of_range when the band is outside 0 .. kScoreBands - 1
// or the sequence outside 0 .. 2^40 - 1 (a score past 2^53 would lose its order).
inline double pack_score(long long band, long long seq) {
  if (band < 0 || band >= kScoreBands) throw std::out_of_range("score band " + std::to_string(band) + " is outside 0 .. 8191");
  if (seq < 0 || seq >= static_cast<long long>(kScoreBand))
    throw std::out_of_range("score sequence " + std::to_string(seq) + " is outside 0 .. 2^40 - 1");
  return static_cast<double>(band) * kScoreBand + static_cast<double>(seq);
}

// The band and sequence of a score; std::out_of_range when no pack_score gives it.
inline ScoreParts unpack_score(double score) {
  if (!(score >= 0 && score < static_cast<double>(kScoreBands) * kScoreBand) || score != std::floor(score))
    throw std::out_of_range("score " + std::to_string(score) + " is outside the bands (0 .. 2^53 - 1, integer)");
  const auto band = static_cast<long long>(std::floor(score / kScoreBand));
  return {band, static_cast<long long>(score - static_cast<double>(band) * kScoreBand)};
}

// The band part of a score: class rank (spot 0, on-demand 1, reserved 2) and priority.
inline double rank_base(int priority_class_rank, int priority) {
  return pack_score((2 - priority_class_rank) * kPrioritiesPerClass + (100 - priority), 0);
}

// Class rank (spot 0, on-demand 1, reserved 2) of a rank base (a job's `rank_base`
// field, which stays the priority band whatever the queue's policy).
inline int class_rank_of_score(double score) {
  return 2 - static_cast<int>(unpack_score(score).band / kPrioritiesPerClass);
}

// The class rank a ready-set score tells, when it tells one: under the queue policy
// `priority` the score is rank_base + seq; under fifo, sjf and fair its band is the
// policy's (below), so nullopt: the job's own rank_base says.
inline std::optional<int> class_rank_of_ready_score(double score) {
  if (unpack_score(score).band >= 3 * kPrioritiesPerClass) return std::nullopt;
  return class_rank_of_score(score);
}

// kScoreBand as the scripts receive it (claim.lua checks it against _lib.lua's).
inline const std::string& score_band_arg() {
  static const std::string text = "1099511627776";
  return text;
}

// Queue policies (queue config `policy`). The score of a job is still
// computed once, at PUSH: base(policy) + seq. `priority` keeps rank_base above; the
// other policies store their base as the job's `order_base` field (make_available
// prefers it), and rank_base stays the priority band preemption reads. Bands:
//   priority 0 .. 602 | fifo 700 | sjf 1000 + bucket (0 .. 2047)
//   | fair 4096 + (2 - class rank) * kMaxFairSlots + tenant slot
// so jobs queued under an earlier policy keep a well-defined place after a change.
// fair: the priority class first (reserved, on-demand, spot: the classes
// preemption ranks), the tenant's share within it (claim.lua, _lib_fairshare.lua).
enum class QueuePolicy { priority, fifo, sjf, fair };

// The two orders of `fair` (queue config tenant_fairness.order), one rule
// each in _lib_fairshare.lua (fair_head, fair_rank), which claim.lua applies:
//   tenant (the default; Kueue, YARN): the lowest (decayed use + held) / weight first,
//     whatever the class; within a tenant the higher priority class, then FIFO;
//   priority_class ("class"; Slurm QOS then fairshare): the highest priority class
//     first, the lowest share within it, then FIFO.
// Both read the one band layout below (class band, then tenant slot), so a change of
// order rescores nothing: the jobs queued get the new order at once.
enum class FairOrder { tenant, priority_class };

// What PUSH needs of the queue's configuration to score a job.
struct JobOrder {
  QueuePolicy policy = QueuePolicy::priority;
  int fair_slot = 0;
};

inline constexpr int kFifoBand = 700;
inline constexpr int kSjfBandBase = 1000;
inline constexpr int kSjfBuckets = 2048;       // the last bucket: no declared duration
inline constexpr int kFairBandBase = 4096;
inline constexpr int kMaxFairSlots = 1365;     // tenant slots per class: 4096 + 3 * 1365 <= kScoreBands, exact doubles

// Log-scale duration buckets (~0.9% wide): 80 * log2(1 + s), 1 year -> 1993.
inline int sjf_bucket(std::optional<long long> estimated_seconds) {
  if (!estimated_seconds) return kSjfBuckets - 1;
  const int b = static_cast<int>(std::floor(80.0 * std::log2(1.0 + static_cast<double>(*estimated_seconds))));
  return std::clamp(b, 0, kSjfBuckets - 2);
}

// The fair band of class rank `priority_class_rank` and tenant slot `slot`:
// the class first (reserved lowest), slots past kMaxFairSlots - 1 share the last.
inline long long fair_band(int priority_class_rank, long long slot) {
  return kFairBandBase + (2 - std::clamp(priority_class_rank, 0, 2)) * static_cast<long long>(kMaxFairSlots) +
         std::clamp(slot, 0LL, static_cast<long long>(kMaxFairSlots) - 1);
}

// The base of a job's ready-set score under `policy` (the store adds the FIFO seq).
// fair_slot: the tenant's slot in the queue's tenant_fairness (0 = unnamed tenants;
// the schema allows kMaxFairSlots - 1 names).
inline double order_base(QueuePolicy policy, int priority_class_rank, int priority, std::optional<long long> estimated_seconds,
                         int fair_slot) {
  switch (policy) {
    case QueuePolicy::fifo: return pack_score(kFifoBand, 0);
    case QueuePolicy::sjf: return pack_score(kSjfBandBase + sjf_bucket(estimated_seconds), 0);
    case QueuePolicy::fair: return pack_score(fair_band(priority_class_rank, fair_slot), 0);
    case QueuePolicy::priority: break;
  }
  return rank_base(priority_class_rank, priority);
}

// The fair order base of a job whose priority class changes (escalation):
// the same tenant slot in the new class's band; nullopt for a base that is not a
// fair one (another policy's: its order does not follow the class).
inline std::optional<double> fair_base_for_class(double base, int to_rank) {
  const long long band = unpack_score(base).band;
  if (band < kFairBandBase || band >= kFairBandBase + 3LL * kMaxFairSlots) return std::nullopt;
  return pack_score(fair_band(to_rank, (band - kFairBandBase) % kMaxFairSlots), 0);
}

}  // namespace ojs::broker
