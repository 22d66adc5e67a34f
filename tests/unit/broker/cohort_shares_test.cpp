// Cohort shares (broker/scheduling/cohort_shares.*): pure, no Redis. The reclaim
// victims are tested with the other victim choices (victims_test.cpp).
#include <gtest/gtest.h>

#include <random>

#include "broker/scheduling/cohort_shares.hpp"

using namespace ojs::broker;

namespace {

CohortMember member(const std::string& queue, long long nominal, long long used, long long waiting, long long limit_now,
                    std::optional<long long> borrowing = std::nullopt, std::optional<long long> lending = std::nullopt) {
  return {queue, nominal, borrowing, lending, used, waiting, limit_now};
}

const CohortShare& of(const std::vector<CohortShare>& shares, const std::string& queue) {
  for (const auto& s : shares)
    if (s.queue == queue) return s;
  throw std::runtime_error("no share for " + queue);
}

}  // namespace

TEST(CohortShares, AnIdleMemberLendsItsWholeShareToOneThatWaits) {
  const auto shares = cohort_shares({member("a", 8, 0, 0, 8), member("b", 8, 8, 20, 8)});
  EXPECT_EQ(of(shares, "a").limit, 0);
  EXPECT_EQ(of(shares, "a").lent, 8);
  EXPECT_EQ(of(shares, "b").planned, 16);
  EXPECT_EQ(of(shares, "b").borrowed, 8);
  // Lowering a's share comes first; b's rise is written in the same pass because a holds nothing.
  EXPECT_EQ(of(shares, "b").limit, 16);
  EXPECT_EQ(of(shares, "b").reclaim, 0);
}

TEST(CohortShares, NobodyLendsWhenNobodyWaits) {
  const auto shares = cohort_shares({member("a", 8, 0, 0, 8), member("b", 8, 8, 0, 8)});
  EXPECT_EQ(of(shares, "a").limit, 8);
  EXPECT_EQ(of(shares, "b").limit, 8);
}

TEST(CohortShares, ALenderWhoseJobsArriveGetsItsShareBackOnlyOnceTheBorrowersLeave) {
  // b borrowed 8 of a's GPUs; a's jobs now wait for 8.
  auto shares = cohort_shares({member("a", 8, 0, 8, 0), member("b", 8, 16, 4, 16)});
  EXPECT_EQ(of(shares, "b").planned, 8);
  EXPECT_EQ(of(shares, "b").limit, 8);
  EXPECT_EQ(of(shares, "b").reclaim, 8);
  EXPECT_EQ(of(shares, "a").planned, 8);
  EXPECT_EQ(of(shares, "a").limit, 0) << "b still holds the GPUs: a rise now would let the cohort hold 24";
  // Once b's borrowers are gone, a's share is written.
  shares = cohort_shares({member("a", 8, 0, 8, 0), member("b", 8, 8, 12, 8)});
  EXPECT_EQ(of(shares, "a").limit, 8);
  EXPECT_EQ(of(shares, "b").reclaim, 0);
}

TEST(CohortShares, TheLendingLimitBoundsWhatIsBorrowed) {
  const auto shares = cohort_shares({member("a", 8, 0, 0, 8, std::nullopt, 4), member("b", 8, 8, 20, 8)});
  EXPECT_EQ(of(shares, "a").limit, 4);
  EXPECT_EQ(of(shares, "b").limit, 12);
}

TEST(CohortShares, TheBorrowingLimitBoundsWhatIsTaken) {
  const auto shares = cohort_shares({member("a", 8, 0, 0, 8), member("b", 8, 8, 20, 8, 2)});
  EXPECT_EQ(of(shares, "a").limit, 6);
  EXPECT_EQ(of(shares, "b").limit, 10);
}

TEST(CohortShares, NewBorrowingIsSharedBetweenBorrowers) {
  const auto shares = cohort_shares({member("a", 8, 0, 0, 8), member("b", 4, 4, 20, 4), member("c", 4, 4, 20, 4)});
  EXPECT_EQ(of(shares, "b").borrowed, 4);
  EXPECT_EQ(of(shares, "c").borrowed, 4);
}

TEST(CohortShares, RunningBorrowingIsKeptBeforeNewBorrowing) {
  const auto shares = cohort_shares({member("a", 8, 0, 0, 0), member("b", 4, 12, 0, 12), member("c", 4, 4, 20, 4)});
  EXPECT_EQ(of(shares, "b").borrowed, 8);
  EXPECT_EQ(of(shares, "b").reclaim, 0);
  EXPECT_EQ(of(shares, "c").borrowed, 0);
}

// The invariant the brokers rely on, over random cohorts and a run of passes in
// which each member's use moves toward its share in force: the sum over members
// of max(share in force, use) never exceeds the sum of nominal shares.
TEST(CohortShares, NoPassLetsTheCohortHoldMoreThanItsTotal) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 500; ++trial) {
    const int n = 2 + static_cast<int>(rng() % 3);
    std::vector<CohortMember> members;
    long long total = 0;
    for (int i = 0; i < n; ++i) {
      const long long nominal = rng() % 9;
      total += nominal;
      std::optional<long long> borrowing, lending;
      if (rng() % 3 == 0) borrowing = rng() % 5;
      if (rng() % 3 == 0) lending = rng() % 5;
      members.push_back({"q" + std::to_string(i), nominal, borrowing, lending, 0, 0, nominal});
    }
    for (int pass = 0; pass < 30; ++pass) {
      for (auto& m : members) m.waiting = rng() % 12;
      const auto shares = cohort_shares(members);
      long long held = 0;
      for (std::size_t i = 0; i < members.size(); ++i) {
        members[i].limit_now = shares[i].limit;
        held += std::max(shares[i].limit, members[i].used);
      }
      ASSERT_LE(held, total) << "trial " << trial << " pass " << pass;
      // Between passes: claims fill a share (up to what waits), reclaim and ends free GPUs.
      for (auto& m : members) {
        if (m.used > m.limit_now) m.used = m.limit_now;  // the reclaimed jobs leave
        else m.used = std::min(m.limit_now, m.used + m.waiting);
        if (rng() % 4 == 0) m.used = std::max(0LL, m.used - static_cast<long long>(rng() % 4));
      }
    }
  }
}
