// The shares capacity preemption and the start estimate weigh, from a read
// of a fair queue's usage hash as stored (scheduling/fair_order.cpp fair_shares_of):
// the claim's own formula, no Lua copy.
#include <gtest/gtest.h>

#include "broker/scheduling/fair_order.hpp"

using ojs::broker::FairUsage;
using ojs::broker::PreemptionStore;

namespace {

constexpr std::int64_t kNow = 1764000000000;

PreemptionStore::FairUsageRead read_of(const std::string& layout, std::vector<FairUsage::Usage> usage) {
  PreemptionStore::FairUsageRead r;
  r.fair.layout_json = layout;
  r.fair.half_life_ms = "3600000";
  r.fair.usage = std::move(usage);
  r.now_ms = kNow;
  return r;
}

const std::string kTenantOrder = R"({"base":4096,"slots":2,"default_weight":1,"tenants":{"team-a":[1,1],"team-b":[2,3]}})";
const std::string kClassOrder = R"({"base":4096,"slots":2,"default_weight":1,"order":"class","tenants":{"team-a":[1,1],"team-b":[2,3]}})";

}  // namespace

TEST(FairShares, NotFairOrNotTheTenantOrderGivesNone) {
  EXPECT_FALSE(ojs::broker::fair_shares_of(std::nullopt, true)) << "the queue's policy is not fair";
  EXPECT_FALSE(ojs::broker::fair_shares_of(read_of(kClassOrder, {}), false)) << "preemption weighs tenants under the tenant order only";
  ASSERT_TRUE(ojs::broker::fair_shares_of(read_of(kClassOrder, {}), true)) << "the estimate orders by either";
  EXPECT_FALSE(ojs::broker::fair_shares_of(read_of(kClassOrder, {}), true)->by_tenant);
}

// Decayed use and held GPUs, brought to the read's time: team-a used all of the queue's
// decayed GPU-seconds and holds nothing; team-b, whose only job still runs (it has a
// held value and no decayed one), holds the queue's 2 GPUs and counts.
TEST(FairShares, WeighedFromTheStoredValuesAtTheReadsTime) {
  const std::string at = std::to_string(kNow - 3600000);  // an hour ago: halved since
  const auto shares = ojs::broker::fair_shares_of(
      read_of(kTenantOrder, {{"*", at + " 100 0 0 0", "2 1 0 0 " + std::to_string(kNow) + " 0 0"},
                             {"team-a", at + " 100 0 0 0", ""},
                             {"team-b", "", "2 1 0 0 " + std::to_string(kNow) + " 0 0"}}),
      false);
  ASSERT_TRUE(shares);
  EXPECT_EQ(shares->resource, 1) << "GPUs";
  EXPECT_DOUBLE_EQ(shares->queue_held, 2);
  ASSERT_TRUE(shares->tenants.count("team-b"));
  EXPECT_DOUBLE_EQ(shares->tenants.at("team-b").held, 2);
  EXPECT_DOUBLE_EQ(shares->tenants.at("team-b").weight, 3);
  EXPECT_DOUBLE_EQ(shares->tenants.at("team-a").used, 1);
  EXPECT_DOUBLE_EQ(shares->share("team-a"), 1);
  EXPECT_DOUBLE_EQ(shares->share("team-b"), 1.0 / 3);
}

// The held value's running use (r) counts as used: an ended attempt's use not folded
// yet is there, so a read between an end and its fold sees it.
TEST(FairShares, UseNotYetFoldedCounts) {
  const std::string now = std::to_string(kNow);
  const auto use = ojs::broker::fair_use_of({"team-a", "", "0 0 0 0 " + now + " 7000000 0"}, kNow, 3600000);
  EXPECT_DOUBLE_EQ(use.used[0], 7) << "7 GPU-seconds, held by nothing now";
  EXPECT_DOUBLE_EQ(use.held[0], 0);
}
