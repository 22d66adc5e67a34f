// The claim's decision (scheduling/claim_decision.cpp) over hand-built snapshots:
// the order of the heads, the budget, tenant quotas past the head, backfill, and
// several jobs in one claim.
#include "broker/scheduling/claim_decision.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "broker/scheduling/fair_order.hpp"
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

TEST(ClaimDecision, WithoutTheBonusTheOlderHeadOfABandGoesFirst) {
  ClaimSnapshot snap;
  snap.heads = {{"old-low", score(100, 1)}, {"young-high", score(100, 5)}, {"other-band", score(99, 9)}};
  const std::vector<EligibleClass> eligible{cls("old-low"), cls("young-high", 0, 2.0), cls("other-band")};
  ClaimDecisionInput in{snap, eligible, 1, 0};
  in.by_bonus = false;  // the start estimate's run: it decides before it judges a worker
  EXPECT_EQ(ids(decide_claim(in)), (std::vector<std::string>{"other-band", "old-low", "young-high"}));
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

EligibleClass tpu_cls(std::string id, int chips) {
  EligibleClass c = cls(std::move(id));
  c.tpu_chips = chips;
  return c;
}

// max_total_tpu_chips keeps back a TPU class whose chips would pass it, as the GPU
// limits keep back GPU classes; GPU and CPU classes are not held to it.
TEST(ClaimDecision, TheTpuChipBudgetKeepsBackATpuClassAndSaysWhich) {
  ClaimSnapshot snap;
  snap.heads = {{"pod16", score(1, 1)}, {"pod8", score(1, 2)}, {"gpu", score(1, 3)}, {"cpu", score(1, 4)}};
  snap.budget.max_tpu_chips = 16;
  snap.budget.tpu_chips_in_use = 8;
  snap.budget.max_gpus = 4;
  const std::vector<EligibleClass> eligible{tpu_cls("pod16", 16), tpu_cls("pod8", 8), cls("gpu", 4), cls("cpu")};
  const auto plan = decide_claim({snap, eligible, 1, 0});
  EXPECT_EQ(ids(plan), (std::vector<std::string>{"pod8", "gpu", "cpu"}));
  ASSERT_EQ(plan.blocked.size(), 1u);
  EXPECT_EQ(plan.blocked[0].class_id, "pod16");
  EXPECT_EQ(plan.blocked[0].kind, "max_total_tpu_chips");
  EXPECT_EQ(plan.blocked[0].in_use, 8);
  EXPECT_EQ(plan.blocked[0].limit, 16);
  EXPECT_EQ(plan.picks[0].tpu_chips, 8) << "the commit charges and re-checks the chips";
  EXPECT_EQ(plan.picks[1].tpu_chips, 0);
}

// A TPU job is not held to the GPU limits: a full GPU budget (jobs and GPUs) does not
// keep it, and the TPU chips it charges do not count against them.
TEST(ClaimDecision, TheGpuLimitsDoNotHoldATpuJob) {
  ClaimSnapshot snap;
  snap.heads = {{"pod", score(1, 1)}, {"gpu", score(1, 2)}};
  snap.budget.max_gpus = 2;
  snap.budget.gpus_in_use = 2;
  snap.budget.max_jobs = 1;
  snap.budget.gpu_jobs = 1;
  const std::vector<EligibleClass> eligible{tpu_cls("pod", 4), cls("gpu", 1)};
  const auto plan = decide_claim({snap, eligible, 1, 0});
  EXPECT_EQ(ids(plan), std::vector<std::string>{"pod"});
  ASSERT_EQ(plan.blocked.size(), 1u);
  EXPECT_EQ(plan.blocked[0].class_id, "gpu");
  EXPECT_EQ(plan.blocked[0].kind, "max_total_gpus");
}

// Several jobs in one claim: each pick's chips count before the next is chosen.
TEST(ClaimDecision, SeveralTpuJobsFillTheChipBudgetPickByPick) {
  ClaimSnapshot snap;
  snap.heads = {{"pod", score(1, 1)}};
  snap.budget.max_tpu_chips = 16;
  const std::vector<EligibleClass> eligible{tpu_cls("pod", 8)};
  ReadyDetail detail;
  detail.jobs["pod"] = {{"p1", score(1, 1), "", {}}, {"p2", score(1, 2), "", {}}, {"p3", score(1, 3), "", {}}};
  const auto plan = decide_claim({snap, eligible, 3, 0, &detail});
  EXPECT_EQ(ids(plan), (std::vector<std::string>{"pod/p1", "pod/p2"})) << "16 chips hold two 8-chip jobs";
  ASSERT_EQ(plan.blocked.size(), 1u);
  EXPECT_EQ(plan.blocked[0].kind, "max_total_tpu_chips");
  EXPECT_EQ(plan.blocked[0].in_use, 16);
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


// A fair queue: weights 1:1, team-a holds one GPU now, team-b none.
FairDetail fair_detail_of(const std::string& order) {
  FairDetail f;
  f.layout_json = R"({"base":4096,"slots":2,"default_weight":1,"tenants":{"team-a":[1,1],"team-b":[2,1]},"order":")" + order + R"("})";
  f.half_life_ms = "0";  // what is held now only
  f.usage = {{"*", "", "1 1 0 0 0 0 0"}, {"team-a", "", "1 1 0 0 0 0 0"}};
  return f;
}
double fair_score(int class_band, int slot, long long seq) { return pack_score(4096 + class_band * kMaxFairSlots + slot, seq); }

TEST(ClaimDecision, FairTenantOrderServesTheLowerShareFirstWhateverItsSlotOrAge) {
  ClaimSnapshot snap;
  snap.fair = true;
  snap.heads = {{"c", fair_score(1, 1, 1)}};
  const std::vector<EligibleClass> eligible{cls("c", 1)};
  const auto first = decide_claim({snap, eligible, 1, 0});
  EXPECT_TRUE(first.needs_fair) << "the fair order's candidates are read first";
  auto fair = fair_detail_of("tenant");
  fair.classes["c"] = {{1, 1, "a-old", fair_score(1, 1, 1), "team-a", {}}, {1, 2, "b-young", fair_score(1, 2, 9), "team-b", {}}};
  ClaimDecisionInput in{snap, eligible, 1, 0};
  in.fair = &fair;
  const auto plan = decide_claim(in);
  ASSERT_FALSE(plan.picks.empty());
  EXPECT_EQ(plan.picks[0].job_id, "b-young") << "team-b holds nothing: its share is the lower";
}

// Delay scheduling under the fair order: when the job the order offers in a class is
// too young for this (cold) worker, the class waits for a warm one; another tenant's
// older job of it does not take the slot against the order.
TEST(ClaimDecision, FairLocalityHoldKeepsTheClassWhenItsOfferedJobIsYoung) {
  ClaimSnapshot snap;
  snap.fair = true;
  snap.heads = {{"c", fair_score(1, 1, 1)}, {"d", fair_score(1, 1, 2)}};
  std::vector<EligibleClass> eligible{cls("c", 1), cls("d", 1)};
  eligible[0].hold_enqueued_after_ms = 1000;  // c prefers a model this worker lacks
  auto fair = fair_detail_of("tenant");
  fair.classes["c"] = {{1, 1, "a-old", fair_score(1, 1, 1), "team-a", {}, 500}, {1, 2, "b-young", fair_score(1, 2, 9), "team-b", {}, 2000}};
  fair.classes["d"] = {{1, 1, "a-d", fair_score(1, 1, 2), "team-a", {}, 500}};
  ClaimDecisionInput in{snap, eligible, 1, 0};
  in.fair = &fair;
  EXPECT_EQ(decide_claim(in).picks.at(0).job_id, "a-d") << "c's offer (team-b's) is held; a-old does not jump the order";
  fair.classes["c"][1].enqueued_ms = 900;  // b's job has waited the delay
  EXPECT_EQ(decide_claim(in).picks.at(0).job_id, "b-young");
}

TEST(ClaimDecision, FairClassOrderServesTheHigherClassFirstThenTheLowerShare) {
  ClaimSnapshot snap;
  snap.fair = true;
  snap.heads = {{"c", fair_score(0, 1, 5)}};
  const std::vector<EligibleClass> eligible{cls("c", 1)};
  auto fair = fair_detail_of("class");
  fair.classes["c"] = {{0, 1, "a-reserved", fair_score(0, 1, 5), "team-a", {}}, {2, 2, "b-spot", fair_score(2, 2, 1), "team-b", {}}};
  ClaimDecisionInput in{snap, eligible, 1, 0};
  in.fair = &fair;
  EXPECT_EQ(decide_claim(in).picks.at(0).job_id, "a-reserved") << "the class first, though team-a's share is the higher";
  fair.layout_json = fair_detail_of("tenant").layout_json;
  EXPECT_EQ(decide_claim(in).picks.at(0).job_id, "b-spot") << "under the tenant order the share first";
}

TEST(ClaimDecision, FairSeveralJobsShareABatchByWhatEachPickHolds) {
  ClaimSnapshot snap;
  snap.fair = true;
  snap.heads = {{"c", fair_score(1, 1, 1)}};
  const std::vector<EligibleClass> eligible{cls("c", 1)};
  auto fair = fair_detail_of("tenant");
  fair.usage = {};  // nothing used or held yet
  for (int i = 0; i < 4; ++i) {
    fair.classes["c"].push_back({1, 1, "a" + std::to_string(i), fair_score(1, 1, i), "team-a", {}});
    fair.classes["c"].push_back({1, 2, "b" + std::to_string(i), fair_score(1, 2, i), "team-b", {}});
  }
  std::sort(fair.classes["c"].begin(), fair.classes["c"].end(), [](const auto& x, const auto& y) { return x.score < y.score; });
  ClaimDecisionInput in{snap, eligible, 4, 0};
  in.fair = &fair;
  const auto plan = decide_claim(in);
  ASSERT_GE(plan.picks.size(), 4u);
  int a = 0;
  for (int i = 0; i < 4; ++i) a += plan.picks[i].job_id[0] == 'a';
  EXPECT_EQ(a, 2) << "each pick is held before the next is chosen: 2 and 2";
}

}  // namespace
}  // namespace ojs::broker
