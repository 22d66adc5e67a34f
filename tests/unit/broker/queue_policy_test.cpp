// The ready-set score per queue policy (broker/store/priority_score.hpp):
// bands of the policies never overlap, sjf is monotone in the declared duration,
// and every score stays an exact double.
#include <gtest/gtest.h>

#include "broker/governance/queue_config.hpp"
#include "broker/store/priority_score.hpp"

using namespace ojs::broker;

TEST(QueuePolicyScore, SjfBucketsAreMonotoneAndUndeclaredGoesLast) {
  int previous = -1;
  for (long long s : {1LL, 2LL, 5LL, 60LL, 61LL, 3600LL, 86400LL, 31'536'000LL}) {
    const int b = sjf_bucket(s);
    EXPECT_GT(b, previous) << s;
    previous = b;
  }
  EXPECT_LT(sjf_bucket(31'536'000LL), sjf_bucket(std::nullopt));
  EXPECT_EQ(sjf_bucket(std::nullopt), kSjfBuckets - 1);
}

TEST(QueuePolicyScore, PolicyBandsAreDisjointAndExact) {
  const double top_priority = rank_base(0, -100);  // the largest priority band
  const double fifo = order_base(QueuePolicy::fifo, 2, 100, std::nullopt, 0);
  const double sjf_first = order_base(QueuePolicy::sjf, 1, 0, 1, 0);
  const double sjf_last = order_base(QueuePolicy::sjf, 1, 0, std::nullopt, 0);
  const double fair_first = order_base(QueuePolicy::fair, 2, 0, std::nullopt, 0);  // reserved, unnamed tenants
  const double fair_last = order_base(QueuePolicy::fair, 0, 0, std::nullopt, kMaxFairSlots + 7);  // spot, past the slots
  EXPECT_LT(top_priority, fifo);
  EXPECT_LT(fifo, sjf_first);
  EXPECT_LT(sjf_last, fair_first);
  EXPECT_EQ(fair_last, (kFairBandBase + 3 * kMaxFairSlots - 1) * kScoreBand);  // clamped
  // Every reserved job's band before every on-demand one's, before every spot one's.
  EXPECT_LT(order_base(QueuePolicy::fair, 2, -100, std::nullopt, kMaxFairSlots - 1), order_base(QueuePolicy::fair, 1, 100, std::nullopt, 0));
  EXPECT_LT(order_base(QueuePolicy::fair, 1, -100, std::nullopt, kMaxFairSlots - 1), order_base(QueuePolicy::fair, 0, 100, std::nullopt, 0));
  EXPECT_LT(fair_last + kScoreBand, 9007199254740992.0);  // + a full sequence: still below 2^53
  EXPECT_EQ(order_base(QueuePolicy::priority, 2, 7, 60, 3), rank_base(2, 7));
  // fifo ignores class and priority; sjf ignores them too.
  EXPECT_EQ(order_base(QueuePolicy::fifo, 0, -100, 5, 0), fifo);
  EXPECT_EQ(order_base(QueuePolicy::sjf, 0, -100, 1, 0), sjf_first);
}

// The fair weights as PUSH (slots) and claim.lua (fair_tenants) read them.
TEST(QueuePolicyConfig, SlotsFollowNameOrderAndTheClaimFormCarriesWeights) {
  const auto c = governance::parse_queue_config(
      {{"policy", "fair"}, {"tenant_fairness", {{"weights", {{"team-b", 3}, {"tenant:team-a", 1}}}, {"default_weight", 2}}}});
  EXPECT_EQ(c.policy, QueuePolicy::fair);
  EXPECT_EQ(c.tenant_fairness.slot_of("team-a"), 1);
  EXPECT_EQ(c.tenant_fairness.slot_of("team-b"), 2);
  EXPECT_EQ(c.tenant_fairness.slot_of("someone-else"), 0);
  EXPECT_EQ(governance::fairness_for_claim(c.tenant_fairness),
            nlohmann::json({{"base", kFairBandBase}, {"slots", 3}, {"default_weight", 2.0}, {"order", "tenant"},
                            {"tenants", {{"team-a", {1, 1.0}}, {"team-b", {2, 3.0}}}}}));
  const auto out = governance::to_json(c, "q");
  EXPECT_EQ(out["policy"], "fair");
  EXPECT_EQ(governance::parse_queue_config({{"policy", out["policy"]}, {"tenant_fairness", out["tenant_fairness"]}})
                .tenant_fairness.weights,
            c.tenant_fairness.weights);
}
