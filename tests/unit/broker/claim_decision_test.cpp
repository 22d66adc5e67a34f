// The claim's decision (scheduling/claim_decision.cpp) over hand-built snapshots:
// the order of the heads, the budget, tenant quotas past the head, backfill, and
// several jobs in one claim.
#include "broker/scheduling/claim_decision.hpp"

#include <gtest/gtest.h>

#include "broker/store/priority_score.hpp"

namespace ojs::broker {
namespace {

double score(long long band, long long seq) { return pack_score(band, seq); }

EligibleClass cls(std::string id, int gpus = 0, double bonus = 0) {
  EligibleClass c;
  c.id = std::move(id);
  c.gpus = gpus;
  c.bonus = bonus;
  return c;
}

std::vector<std::string> ids(const ClaimPlan& plan) {
  std::vector<std::string> out;
  for (const auto& p : plan.picks) out.push_back(p.class_id + (p.job_id.empty() ? "" : "/" + p.job_id));
  return out;
}

TEST(ClaimDecision, HeadsInBandThenBonusThenAgeOrder) {
  ClaimSnapshot snap;
  snap.heads = {{"old-low", score(100, 1)}, {"young-high", score(100, 5)}, {"other-band", score(99, 9)}, {"empty", 0}};
  snap.heads.pop_back();  // a class without a waiting job has no head
  const std::vector<EligibleClass> eligible{cls("old-low"), cls("young-high", 0, 2.0), cls("other-band"), cls("empty")};
  const auto plan = decide_claim({snap, eligible, 1, 0});
  EXPECT_EQ(ids(plan), (std::vector<std::string>{"other-band", "young-high", "old-low"}))
      << "the better band first, then within a band the higher bonus, then the older head; head picks, with spares";
  EXPECT_TRUE(plan.needs_jobs.empty());
}

TEST(ClaimDecision, OnlyEligibleClassesArePicked) {
  ClaimSnapshot snap;
  snap.heads = {{"a", score(1, 1)}, {"b", score(1, 2)}};
  const std::vector<EligibleClass> eligible{cls("b")};
  EXPECT_EQ(ids(decide_claim({snap, eligible, 1, 0})), std::vector<std::string>{"b"});
}

TEST(ClaimDecision, TheBudgetKeepsBackAClassAndSaysWhich) {
  ClaimSnapshot snap;
  snap.heads = {{"big", score(1, 1)}, {"small", score(1, 2)}, {"cpu", score(1, 3)}};
  snap.budget.max_gpus = 4;
  snap.budget.gpus_in_use = 2;
  const std::vector<EligibleClass> eligible{cls("big", 4), cls("small", 2), cls("cpu", 0)};
  const auto plan = decide_claim({snap, eligible, 1, 0});
  EXPECT_EQ(ids(plan), (std::vector<std::string>{"small", "cpu"}));
  ASSERT_EQ(plan.blocked.size(), 1u);
  EXPECT_EQ(plan.blocked[0].class_id, "big");
  EXPECT_EQ(plan.blocked[0].kind, "max_total_gpus");
  EXPECT_EQ(plan.blocked[0].in_use, 2);
  EXPECT_EQ(plan.blocked[0].limit, 4);
}

TEST(ClaimDecision, TenantQuotasReadPastTheHeadThenSkipAnOverQuotaTenant) {
  ClaimSnapshot snap;
  snap.tenant_quotas = true;
  snap.heads = {{"c", score(1, 1)}};
  const std::vector<EligibleClass> eligible{cls("c", 2)};
  const auto first = decide_claim({snap, eligible, 1, 0});
  ASSERT_EQ(first.needs_jobs, std::vector<std::string>{"c"}) << "a quota may keep the head: the class's jobs are read first";
  EXPECT_TRUE(first.with_fields);
  EXPECT_TRUE(first.picks.empty());
  ReadyDetail detail;
  detail.jobs["c"] = {{"j1", score(1, 1), "team-a", {}}, {"j2", score(1, 2), "team-a", {}}, {"j3", score(1, 3), "team-b", {}}};
  detail.quotas.limits = {{"team-a", 2}, {"*", 4}};
  detail.quotas.used = {{"team-a", 2}};
  const auto plan = decide_claim({snap, eligible, 1, 0, &detail});
  ASSERT_FALSE(plan.picks.empty());
  EXPECT_EQ(plan.picks[0].job_id, "j3") << "team-a is at its quota: team-b's job behind it goes first";
  detail.quotas.limits = {{"team-a", 2}, {"*", 0}};
  const auto none = decide_claim({snap, eligible, 1, 0, &detail});
  EXPECT_TRUE(none.picks.empty());
  ASSERT_EQ(none.blocked.size(), 1u);
  EXPECT_EQ(none.blocked[0].kind, "tenant_quota:team-a") << "the first block is the one reported";
}

TEST(ClaimDecision, BackfillTakesOnlyJobsThatEndBeforeTheReservation) {
  ClaimSnapshot snap;
  snap.heads = {{"c", score(1, 1)}};
  auto c = cls("c", 1);
  c.backfill_before_ms = 100'000;
  const std::vector<EligibleClass> eligible{c};
  ReadyDetail detail;
  detail.jobs["c"] = {{"long", score(1, 1), "", 3600.0}, {"undeclared", score(1, 2), "", {}}, {"short", score(1, 3), "", 50.0}};
  const auto plan = decide_claim({snap, eligible, 1, 10'000, &detail});
  ASSERT_FALSE(plan.picks.empty());
  EXPECT_EQ(plan.picks[0].job_id, "short");
  detail.jobs["c"].pop_back();
  const auto none = decide_claim({snap, eligible, 1, 10'000, &detail});
  EXPECT_TRUE(none.picks.empty());
  ASSERT_EQ(none.blocked.size(), 1u);
  EXPECT_EQ(none.blocked[0].kind, "backfill");
  EXPECT_EQ(none.blocked[0].in_use, 3600) << "what the head declared";
}

TEST(ClaimDecision, SeveralJobsMergeTheClassesInTheQueueOrderWithinTheBudget) {
  ClaimSnapshot snap;
  snap.heads = {{"a", score(1, 1)}, {"b", score(1, 2)}};
  snap.budget.max_jobs = 3;
  const std::vector<EligibleClass> eligible{cls("a", 1), cls("b", 1)};
  const auto first = decide_claim({snap, eligible, 4, 0});
  ASSERT_EQ(first.needs_jobs.size(), 2u);
  EXPECT_FALSE(first.with_fields);
  ReadyDetail detail;
  detail.jobs["a"] = {{"a1", score(1, 1), "", {}}, {"a3", score(1, 3), "", {}}, {"a5", score(1, 5), "", {}}};
  detail.jobs["b"] = {{"b2", score(1, 2), "", {}}, {"b4", score(1, 4), "", {}}};
  const auto plan = decide_claim({snap, eligible, 4, 0, &detail});
  EXPECT_EQ(ids(plan), (std::vector<std::string>{"a/a1", "b/b2", "a/a3"})) << "three GPU jobs fit the budget's max_concurrent_gpu_jobs";
  ASSERT_FALSE(plan.blocked.empty());
  EXPECT_EQ(plan.blocked[0].kind, "max_concurrent_gpu_jobs");
}

}  // namespace
}  // namespace ojs::broker
