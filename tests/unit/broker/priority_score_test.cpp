// The ready-set score, packed and unpacked in one place (priority_score.hpp), with
// its bounds checked on both ends: the Lua side (_lib.lua score_pack / score_unpack)
// is tested against a real Redis in tests/integration/score_band_test.cpp.
#include <gtest/gtest.h>

#include <stdexcept>

#include "broker/store/priority_score.hpp"

using namespace ojs::broker;

TEST(ScoreBand, PackAndUnpackRoundTripAtTheEdges) {
  const long long last_seq = (1LL << 40) - 1;
  EXPECT_EQ(pack_score(0, 0), 0.0);
  EXPECT_EQ(pack_score(8191, last_seq), 9007199254740991.0);  // 2^53 - 1, exact
  for (const auto& [band, seq] : {std::pair{0LL, 0LL}, {0LL, last_seq}, {1LL, 0LL}, {602LL, 12345LL}, {8191LL, last_seq}}) {
    const auto parts = unpack_score(pack_score(band, seq));
    EXPECT_EQ(parts.band, band);
    EXPECT_EQ(parts.seq, seq);
  }
}

TEST(ScoreBand, PackRefusesABandOrSequenceOutsideItsRange) {
  EXPECT_THROW(pack_score(-1, 0), std::out_of_range);
  EXPECT_THROW(pack_score(kScoreBands, 0), std::out_of_range);
  EXPECT_THROW(pack_score(0, -1), std::out_of_range);
  EXPECT_THROW(pack_score(0, 1LL << 40), std::out_of_range);  // would spill into the next band
}

TEST(ScoreBand, UnpackRefusesAScoreNoPackGives) {
  EXPECT_THROW(unpack_score(-1), std::out_of_range);
  EXPECT_THROW(unpack_score(9007199254740992.0), std::out_of_range);  // 2^53
  EXPECT_THROW(unpack_score(0.5), std::out_of_range);
}

TEST(ScoreBand, RankAndPolicyBasesAreBandStarts) {
  EXPECT_EQ(unpack_score(rank_base(2, 100)).band, 0);  // reserved, highest priority: served first
  EXPECT_EQ(unpack_score(rank_base(0, -100)).band, 3 * kPrioritiesPerClass - 1);
  EXPECT_EQ(class_rank_of_score(rank_base(1, 7) + 99), 1);
  EXPECT_EQ(class_rank_of_ready_score(order_base(QueuePolicy::fifo, 2, 0, std::nullopt, 0)), std::nullopt);
  // fair: the class band (reserved first), then the tenant slot, clamped to the class's last.
  EXPECT_EQ(unpack_score(order_base(QueuePolicy::fair, 2, 0, std::nullopt, 3)).band, kFairBandBase + 3);
  EXPECT_EQ(unpack_score(order_base(QueuePolicy::fair, 1, 0, std::nullopt, 0)).band, kFairBandBase + kMaxFairSlots);
  EXPECT_EQ(unpack_score(order_base(QueuePolicy::fair, 0, 0, std::nullopt, 1 << 20)).band, kFairBandBase + 3 * kMaxFairSlots - 1);
  EXPECT_LT(kFairBandBase + 3 * kMaxFairSlots, kScoreBands + 1);  // every fair band packs
  EXPECT_EQ(class_rank_of_ready_score(order_base(QueuePolicy::fair, 2, 0, std::nullopt, 0)), std::nullopt);  // the job's rank_base says
}

// Escalation under `fair` moves a job to its tenant's slot of the new class;
// another policy's base has no class to move.
TEST(ScoreBand, FairBaseFollowsTheClassAndKeepsTheTenantSlot) {
  const double spot_slot_5 = order_base(QueuePolicy::fair, 0, 0, std::nullopt, 5);
  EXPECT_EQ(fair_base_for_class(spot_slot_5, 1), order_base(QueuePolicy::fair, 1, 0, std::nullopt, 5));
  EXPECT_EQ(fair_base_for_class(spot_slot_5, 2), order_base(QueuePolicy::fair, 2, 0, std::nullopt, 5));
  EXPECT_EQ(fair_base_for_class(order_base(QueuePolicy::sjf, 0, 0, 60, 0), 2), std::nullopt);
  EXPECT_EQ(fair_base_for_class(rank_base(0, 0), 2), std::nullopt);
}
