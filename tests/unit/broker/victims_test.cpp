// Victim selection (broker/preemption/victims.*): pure, no Redis.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "broker/preemption/capacity_plan.hpp"
#include "broker/preemption/elastic_share_shrink.hpp"
#include "broker/preemption/victims.hpp"
#include "ojs/ml/capabilities.hpp"
#include "ojs/ml/requirements.hpp"

using namespace ojs::broker;
using nlohmann::json;

namespace {

ojs::ml::Capabilities gpus(int count) {
  return ojs::ml::parse_capabilities({{"accelerator", "gpu"}, {"gpu", {{"type", "nvidia-a100"}, {"count", count}, {"memory_gb", 80}}}});
}

ojs::ml::Requirements needs(int count, json extra = json::object()) {
  json job = {{"type", "t"}, {"ext_ml_gpu_count", count}};
  for (auto it = extra.begin(); it != extra.end(); ++it) job[it.key()] = it.value();
  return ojs::ml::parse_requirements(job);
}

RunningJob running(const std::string& id, int rank, int gpus_held, std::int64_t lost_ms, bool preemptible = true) {
  RunningJob r;
  r.job_id = id;
  r.class_rank = rank;
  r.gpus = gpus_held;
  r.lost_ms = lost_ms;
  r.preemptible = preemptible;
  return r;
}

RunningJob borrowing(RunningJob r, int borrowed_gpus) {
  r.borrowed_gpus = borrowed_gpus;
  return r;
}

std::vector<std::string> ids(const VictimChoice& c) {
  std::vector<std::string> out;
  for (const auto& v : c.victims) out.push_back(v.job_id);
  return out;
}

}  // namespace

TEST(Victims, LeastProgressLostFirstAndOnlyAsManyAsNeeded) {
  // 4 GPUs all busy: three spot jobs; a reserved job needs 2.
  const std::vector<RunningJob> jobs = {running("old", 0, 2, 600000), running("fresh", 0, 1, 1000), running("mid", 0, 1, 60000)};
  auto choice = choose_victims(needs(2), 2, gpus(4), jobs);
  ASSERT_TRUE(choice);
  EXPECT_EQ(ids(*choice), (std::vector<std::string>{"fresh", "mid"}));
  EXPECT_EQ(choice->lost_ms, 61000);
  EXPECT_TRUE(choice->fit.eligible());
}

TEST(Victims, UnnecessaryVictimsAreDropped) {
  // Cheapest first would take "small" (1 GPU) then "big" (2 GPUs); "big" alone suffices.
  const std::vector<RunningJob> jobs = {running("small", 0, 1, 10), running("big", 0, 2, 500), running("other", 1, 1, 0, false)};
  auto choice = choose_victims(needs(2), 2, gpus(4), jobs);
  ASSERT_TRUE(choice);
  EXPECT_EQ(ids(*choice), (std::vector<std::string>{"big"}));
}

TEST(Victims, NeverSameOrHigherClassNorNonPreemptible) {
  const std::vector<RunningJob> jobs = {running("od", 1, 1, 0), running("pinned", 0, 1, 0, false)};
  EXPECT_FALSE(choose_victims(needs(1), 1, gpus(2), jobs));  // on-demand cannot preempt on-demand; spot not preemptible
  auto choice = choose_victims(needs(1), 2, gpus(2), jobs);  // reserved may preempt the on-demand one
  ASSERT_TRUE(choice);
  EXPECT_EQ(ids(*choice), (std::vector<std::string>{"od"}));
}

TEST(Victims, NoPreemptionWhenItWouldStillNotFit) {
  const std::vector<RunningJob> jobs = {running("spot", 0, 1, 0), running("res", 2, 3, 0)};
  EXPECT_FALSE(choose_victims(needs(2), 2, gpus(4), jobs));   // only 1 GPU could be freed
  EXPECT_FALSE(choose_victims(needs(1, {{"ext_ml_gpu_memory_gb", 160}}), 2, gpus(4), jobs));  // static refusal
}

TEST(Victims, NoPreemptionWhenItAlreadyFitsOrJobsAreAlreadyLeaving) {
  std::vector<RunningJob> jobs = {running("a", 0, 1, 0), running("b", 0, 1, 0)};
  EXPECT_FALSE(choose_victims(needs(1), 2, gpus(3), jobs));  // one GPU is free
  jobs[0].preempting = true;
  EXPECT_FALSE(choose_victims(needs(1), 2, gpus(2), jobs));  // "a" is on its way out already
  auto choice = choose_victims(needs(2), 2, gpus(2), jobs);  // needs both: only "b" is added
  ASSERT_TRUE(choice);
  EXPECT_EQ(ids(*choice), (std::vector<std::string>{"b"}));
}

TEST(Victims, AntiAffinityConflictsCanBeResolvedByPreemption) {
  auto job = running("llama", 0, 0, 0);
  job.labels = {{"model_id", "llama"}};
  auto req = needs(1, {{"ext_ml_anti_affinity", {{"required", {{{"key", "model_id"}, {"operator", "In"}, {"values", {"llama"}}}}}}}});
  auto choice = choose_victims(req, 2, gpus(2), {job});
  ASSERT_TRUE(choice);
  EXPECT_EQ(ids(*choice), (std::vector<std::string>{"llama"}));
}

// A job that stays keeps its own anti-affinity: it refuses the preemptor whatever
// else leaves, so preempting the spot job would be for nothing.
TEST(Victims, AJobThatStaysStillRefusesThePreemptorByItsAntiAffinity) {
  auto spot = running("spot", 0, 1, 0);
  auto guard = running("guard", 1, 1, 0, /*preemptible=*/false);
  guard.anti_affinity = needs(1, {{"ext_ml_anti_affinity", {{"required", {{{"key", "model_id"}, {"operator", "In"}, {"values", {"llama"}}}}}}}})
                            .hard.anti_affinity;
  ASSERT_EQ(guard.anti_affinity.size(), 1u);
  const auto llama = needs(1, {{"ext_ml_model_id", "llama"}});
  EXPECT_FALSE(choose_victims(llama, 2, gpus(2), {spot, guard}));
  guard.anti_affinity.clear();
  EXPECT_TRUE(choose_victims(llama, 2, gpus(2), {spot, guard}));
}

// A drained device takes no job: freeing its neighbour does not make room for two GPUs.
TEST(Victims, ADrainedDeviceIsNotRoomThatPreemptionCanMake) {
  const auto caps = ojs::ml::parse_capabilities(
      {{"accelerator", "gpu"}, {"gpu", {{"type", "nvidia-a100"}, {"count", 2}, {"memory_gb", 80}}},
       {"devices", {{{"index", 0}, {"memory_gb", 80}}, {{"index", 1}, {"memory_gb", 80}}}}});
  auto spot = running("spot", 0, 1, 0);
  spot.devices = {0};
  EXPECT_FALSE(choose_victims(needs(2), 2, caps, {spot}, {}, /*drained=*/{1}));
  auto choice = choose_victims(needs(2), 2, caps, {spot});
  ASSERT_TRUE(choice);
  EXPECT_EQ(ids(*choice), (std::vector<std::string>{"spot"}));
  // Two 1-GPU preemptors: one fits beside the drained device once the spot job leaves.
  choice = choose_victims(needs(1), 2, caps, {spot}, {}, {1});
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->fit.devices, (std::vector<int>{0}));
}

TEST(Victims, CheaperPrefersLessLostProgressThenFewerVictims) {
  VictimChoice a, b;
  a.lost_ms = 10;
  b.lost_ms = 20;
  EXPECT_TRUE(cheaper(a, b));
  b.lost_ms = 10;
  a.victims.resize(2);
  b.victims.resize(1);
  EXPECT_TRUE(cheaper(b, a));
}

TEST(BudgetVictims, FreeJustEnoughBudgetLeastProgressLostFirst) {
  QueueBudget budget;
  budget.max_gpus = 12;
  budget.gpus_in_use = 12;
  budget.gpu_jobs = 4;
  const std::vector<RunningJob> jobs = {running("old", 0, 4, 600000), running("fresh", 0, 2, 1000), running("mid", 0, 2, 60000),
                                        running("ondemand", 1, 4, 0, /*preemptible=*/false)};
  // A reserved 4-GPU job: the two cheapest spot jobs (2 + 2 GPUs) free enough.
  auto choice = choose_budget_victims(4, 2, budget, jobs);
  ASSERT_TRUE(choice);
  EXPECT_EQ(ids(*choice), (std::vector<std::string>{"fresh", "mid"}));
  // 12 GPUs cannot be freed: the spot jobs hold 8 and the on-demand job is not preemptible.
  choice = choose_budget_victims(12, 2, budget, jobs);
  EXPECT_FALSE(choice);
  // A preemptible on-demand holder is a victim for a reserved job, and the cheapest one.
  auto with_od = jobs;
  with_od[3].preemptible = true;
  choice = choose_budget_victims(4, 2, budget, with_od);
  ASSERT_TRUE(choice);
  EXPECT_EQ(ids(*choice), (std::vector<std::string>{"ondemand"}));
  // ...but never for an on-demand job (same class).
  choice = choose_budget_victims(4, 1, budget, with_od);
  ASSERT_TRUE(choice);
  EXPECT_EQ(ids(*choice), (std::vector<std::string>{"fresh", "mid"}));
}

// A GPU-memory budget: the victims must give back enough memory, not only GPUs.
TEST(BudgetVictims, AGpuMemoryBudgetFreesEnoughMemory) {
  QueueBudget budget;
  budget.max_gpu_mem_mb = 160000;
  budget.gpu_mem_mb_in_use = 160000;
  budget.gpus_in_use = 3;
  budget.gpu_jobs = 3;
  auto small = running("small", 0, 1, 10);  // a MIG slice: least progress lost, little memory
  small.gpu_mem_mb = 10000;
  auto big = running("big", 0, 1, 500);
  big.gpu_mem_mb = 80000;
  auto mid = running("mid", 0, 1, 100);
  mid.gpu_mem_mb = 70000;
  // A reserved job needing 80 GB: the slice alone frees too little; it and "mid" free 80 GB
  // losing less progress than "big" alone.
  auto choice = choose_budget_victims(1, 2, budget, {small, big, mid}, 80000);
  ASSERT_TRUE(choice);
  EXPECT_EQ(ids(*choice), (std::vector<std::string>{"small", "mid"}));
  // 10 GB fits once the slice leaves.
  choice = choose_budget_victims(1, 2, budget, {small, big, mid}, 10000);
  ASSERT_TRUE(choice);
  EXPECT_EQ(ids(*choice), (std::vector<std::string>{"small"}));
  // Without the memory figure the GPU count is no obstacle: nothing to preempt.
  EXPECT_FALSE(choose_budget_victims(1, 2, budget, {small, big, mid}));
}

TEST(BudgetVictims, NothingWhenTheBudgetAllowsOrJobLimitIsTheObstacle) {
  QueueBudget budget;
  budget.max_gpus = 8;
  budget.gpus_in_use = 4;
  EXPECT_FALSE(choose_budget_victims(4, 2, budget, {running("a", 0, 4, 0)})) << "the budget already allows it";
  budget.max_gpus.reset();
  budget.max_jobs = 2;
  budget.gpu_jobs = 2;
  auto choice = choose_budget_victims(1, 2, budget, {running("a", 0, 1, 50), running("b", 0, 1, 10)});
  ASSERT_TRUE(choice);
  EXPECT_EQ(ids(*choice), (std::vector<std::string>{"b"}));  // one job slot is enough
  std::vector<RunningJob> leaving = {running("a", 0, 1, 50), running("b", 0, 1, 10)};
  leaving[1].preempting = true;
  EXPECT_FALSE(choose_budget_victims(1, 2, budget, leaving)) << "a job already leaving frees the slot";
}

// A TPU-chip budget: a TPU preemptor frees chips from charged TPU jobs only; GPU
// jobs free none of them.
TEST(BudgetVictims, ATpuChipBudgetFreesChipsOfTpuJobs) {
  QueueBudget budget;
  budget.max_tpu_chips = 16;
  budget.tpu_chips_in_use = 16;
  budget.max_gpus = 8;
  budget.gpus_in_use = 4;
  auto pod_a = running("pod-a", 0, 0, 500);
  pod_a.tpu_chips = 8;
  auto pod_b = running("pod-b", 0, 0, 100);
  pod_b.tpu_chips = 8;
  auto gpu = running("gpu", 0, 4, 1);  // least progress lost, but holds no chips
  const BudgetCharge preemptor{0, 1, 0, 8};
  auto choice = choose_budget_victims(preemptor, 2, budget, {pod_a, pod_b, gpu});
  ASSERT_TRUE(choice);
  EXPECT_EQ(ids(*choice), (std::vector<std::string>{"pod-b"}));
  EXPECT_FALSE(choose_budget_victims(BudgetCharge{0, 1, 0, 32}, 2, budget, {pod_a, pod_b, gpu})) << "32 chips never fit 16";
  budget.tpu_chips_in_use = 8;
  EXPECT_FALSE(choose_budget_victims(preemptor, 2, budget, {pod_a, gpu})) << "the budget already allows it";
}

// plan_capacity_preemption: the controller's pass over the workers, shared
// by the start estimate's run and bench/simulator (broker/preemption/capacity_plan.hpp).
TEST(CapacityPlan, OnlyAboveSpotAndNotForAReservationsJob) {
  EXPECT_FALSE(may_preempt(needs(1), 0));
  EXPECT_TRUE(may_preempt(needs(1), 1));
  EXPECT_TRUE(may_preempt(needs(1), 2));
  EXPECT_FALSE(may_preempt(needs(1, {{"ext_ml_reservation_id", "r1"}}), 2));
}

TEST(CapacityPlan, CheapestWorkerUnlessOneFitsOrWillOnceLeavingJobsGo) {
  const auto caps = gpus(2);
  std::vector<std::vector<RunningJob>> on = {
      {running("costly", 0, 2, 600000)},                            // w0: one spot job, much progress at stake
      {running("cheap", 0, 1, 1000), running("keep", 1, 1, 0, false)},  // w1: not enough even without "cheap"
      {running("cheap2", 0, 1, 2000), running("cheap3", 0, 1, 3000)},   // w2: both cheap ones
  };
  std::vector<PreemptionSite> sites(on.size(), PreemptionSite{&caps, {}});
  int reads = 0;
  auto of = [&](std::size_t i) {
    ++reads;
    return on[i];
  };
  auto plan = plan_capacity_preemption(needs(2), 2, sites, of);
  EXPECT_FALSE(plan.fits_on);
  ASSERT_TRUE(plan.worker);
  EXPECT_EQ(*plan.worker, 2u);
  EXPECT_EQ(ids(plan.choice), (std::vector<std::string>{"cheap2", "cheap3"}));
  EXPECT_EQ(reads, 3);
  EXPECT_EQ(victims_gone_by(plan.choice.victims, 1000), 1000 + 30000);  // the default grace period

  // A job already preempting on w0 frees it: the job waits for it, nothing more is preempted.
  on[0][0].preempting = true;
  plan = plan_capacity_preemption(needs(2), 2, sites, of);
  ASSERT_TRUE(plan.fits_on);
  EXPECT_EQ(*plan.fits_on, 0u);
  EXPECT_FALSE(plan.worker);

  // A worker whose hardware does not fit is not read.
  const auto small = gpus(1);
  std::vector<PreemptionSite> one = {PreemptionSite{&small, {}}};
  reads = 0;
  plan = plan_capacity_preemption(needs(2), 2, one, of);
  EXPECT_EQ(reads, 0);
  EXPECT_FALSE(plan.worker);
}

// The tenant order's share rule (capacity_plan.hpp fair_share_allows),
// shares as GPUs held now (no decayed use): 4 GPUs, team-a holds 4, weights 1:1.
TEST(FairSharePreemption, AnotherTenantOnlyBelowItsShareAndAtOrBelowTheVictimAfter) {
  FairShares s;
  s.resource = 1;
  s.queue_held = 4;
  s.tenants = {{"team-a", {1, 0, 4}}, {"team-b", {1, 0, 0}}};
  auto victim = [](const std::string& tenant, const std::string& queue = "q") {
    RunningJob r = running("v", 0, 1, 0);
    r.tenant = tenant;
    r.queue = queue;
    return r;
  };
  EXPECT_TRUE(fair_share_allows(s, "q", "team-b", 1, victim("team-a")));  // 0 -> 1/4 <= 3/4
  s.tenants["team-a"].held = 3, s.tenants["team-b"].held = 1;
  EXPECT_TRUE(fair_share_allows(s, "q", "team-b", 1, victim("team-a")));  // 1/4 -> 2/4 <= 2/4
  s.tenants["team-a"].held = 2, s.tenants["team-b"].held = 2;
  EXPECT_FALSE(fair_share_allows(s, "q", "team-b", 1, victim("team-a")));  // at its share: not below
  EXPECT_TRUE(fair_share_allows(s, "q", "team-a", 1, victim("team-a")));   // its own work: the class rule alone
  EXPECT_TRUE(fair_share_allows(s, "q", "team-b", 1, victim("team-a", "other")));  // another queue's weights are not these
  EXPECT_FALSE(fair_share_allows(s, "q", "", 1, victim("team-a")));        // no tenant: not shared
  // Below its share, but the move would put it above the victim's tenant: team-b (1
  // of 4 held) wants 2 GPUs, team-a's victim frees 1: 3/5 > 2/5, refused.
  s.tenants["team-a"].held = 3, s.tenants["team-b"].held = 1;
  EXPECT_FALSE(fair_share_allows(s, "q", "team-b", 2, victim("team-a")));
  // A weight of 3 makes 3/4 its share: 2 of 4 held is below it, and 3/4 / 3 <= 1/4.
  s.tenants["team-b"].weight = 3;
  s.tenants["team-a"].held = 2, s.tenants["team-b"].held = 2;
  EXPECT_TRUE(fair_share_allows(s, "q", "team-b", 1, victim("team-a")));
  // The filter: empty (any victim) without shares.
  EXPECT_FALSE(static_cast<bool>(fair_victims(std::nullopt, "q", "team-b", 1)));
}

TEST(Victims, AJobUnderItsMinimumRunTimeIsChosenOnlyWhenNothingElseFrees) {
  // 4 GPUs busy; a reserved job needs 2. The fresh job has run under its minimum.
  auto fresh = running("fresh", 0, 2, 1000);
  fresh.young = true;
  auto choice = choose_victims(needs(2, {{"ext_ml_priority_class", "reserved"}}), 2, gpus(4), {fresh, running("old", 0, 2, 600000)});
  ASSERT_TRUE(choice);
  EXPECT_EQ(ids(*choice), std::vector<std::string>{"old"});
  choice = choose_victims(needs(4, {{"ext_ml_priority_class", "reserved"}}), 2, gpus(4), {fresh, running("old", 0, 2, 600000)});
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->victims.size(), 2u);
}

TEST(ReclaimVictims, BorrowingJobsGoFirstWhateverTheirFlags) {
  const auto choice =
      choose_reclaim_victims(4, {running("own", 1, 4, 10, true), borrowing(running("borrower", 1, 4, 999999, false), 4)});
  ASSERT_TRUE(choice);
  ASSERT_EQ(choice->victims.size(), 1u);
  EXPECT_EQ(choice->victims[0].job_id, "borrower");
}

TEST(ReclaimVictims, LeastProgressLostFirstAndNoMoreThanNeeded) {
  const auto choice = choose_reclaim_victims(
      4, {borrowing(running("old", 1, 2, 50000, true), 2), borrowing(running("young", 1, 2, 1000, true), 2),
          borrowing(running("mid", 1, 2, 9000, true), 2)});
  ASSERT_TRUE(choice);
  EXPECT_EQ(ids(*choice), (std::vector<std::string>{"young", "mid"}));
}

TEST(ReclaimVictims, JobsNeitherPreemptibleNorBorrowingAreNotTaken) {
  EXPECT_FALSE(choose_reclaim_victims(2, {running("pinned", 1, 4, 10, false)}));
  auto leaving = borrowing(running("leaving", 1, 4, 10, true), 4);
  leaving.preempting = true;
  EXPECT_FALSE(choose_reclaim_victims(2, {leaving}));
}

TEST(ReclaimVictims, AJobUnderItsMinimumRunTimeIsSparedWhileAnotherFreesEnough) {
  auto young = borrowing(running("young", 1, 2, 1000, true), 2);
  young.young = true;
  auto choice = choose_reclaim_victims(2, {young, borrowing(running("older", 1, 2, 60000, true), 2)});
  ASSERT_TRUE(choice);
  ASSERT_EQ(choice->victims.size(), 1u);
  EXPECT_EQ(choice->victims[0].job_id, "older") << "least progress lost would pick the young job";
  // When nothing else frees enough, the young job goes too.
  choice = choose_reclaim_victims(4, {young, borrowing(running("older", 1, 2, 60000, true), 2)});
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->victims.size(), 2u);
}

namespace {

// One member of elastic gang `id` on a worker, that may leave while the gang has
// `spare` members to spare (shrink instead of evict).
RunningJob member(const std::string& id, const std::string& worker, int gpus_held, std::int64_t lost_ms, int spare) {
  RunningJob r = running(id, 0, gpus_held, lost_ms);
  r.worker_id = worker;
  r.gang_spare = spare;
  r.leaves = spare > 0;
  return r;
}

}  // namespace

TEST(ShrinkVictims, AMemberLeavingAnElasticGangGoesBeforeAWholeJobThatLosesLess) {
  const std::vector<RunningJob> jobs = {running("plain", 0, 2, 1000), member("elastic", "w", 2, 600000, 2)};
  const auto choice = choose_victims(needs(2), 2, gpus(4), jobs);
  ASSERT_TRUE(choice);
  EXPECT_EQ(ids(*choice), (std::vector<std::string>{"elastic"}));
  EXPECT_TRUE(choice->victims[0].leaves);
}

TEST(ShrinkVictims, WholeJobsGoOnlyWhenLeavingIsNotEnough) {
  // The leaving member frees 2 GPUs; the job needs 4: the plain job goes too.
  const std::vector<RunningJob> jobs = {running("plain", 0, 2, 1000), member("elastic", "w", 2, 600000, 2)};
  const auto choice = choose_victims(needs(4), 2, gpus(4), jobs);
  ASSERT_TRUE(choice);
  EXPECT_EQ(ids(*choice), (std::vector<std::string>{"elastic", "plain"}));
}

TEST(ShrinkVictims, AMemberOfAGangAtItsMinimumIsNotToldToLeave) {
  RunningJob at_min = member("elastic", "w", 4, 1000, 0);
  at_min.leaves = true;  // even if marked so: no member to spare
  at_min.gang_spare = 0;
  EXPECT_FALSE(choose_victims(needs(4), 2, gpus(4), {at_min}));
}

TEST(ShrinkVictims, NoGangLosesMoreMembersThanItHasToSpare) {
  std::map<std::string, int> taken;
  EXPECT_TRUE(within_gang_spare({member("g", "w1", 4, 0, 2)}, taken));
  EXPECT_TRUE(within_gang_spare({member("g", "w2", 4, 0, 2)}, taken));
  EXPECT_FALSE(within_gang_spare({member("g", "w3", 4, 0, 2)}, taken));  // a third would go below its minimum
  EXPECT_EQ(taken["g"], 2);
  EXPECT_TRUE(within_gang_spare({member("other", "w3", 4, 0, 1), running("plain", 0, 4, 0)}, taken));  // whole jobs are not counted
}

TEST(ShrinkVictims, AGangPreemptorFreesOneWorkerPerMemberItNeedsWithinTheSpare) {
  // Eight workers run an elastic 2..8 gang (one member each; rank 0 on w0 may not
  // leave, and taking the whole gang costs every member's progress); a 4-member gang
  // of a higher class needs four of them: four members leave, rank 0 stays.
  const auto caps = gpus(4);
  std::vector<std::vector<RunningJob>> on;
  RunningJob rank0 = running("el", 0, 4, 8 * 5000);
  on.push_back({rank0});
  for (int w = 1; w < 8; ++w) on.push_back({member("el", "w" + std::to_string(w), 4, 5000, 6)});
  const std::vector<PreemptionSite> sites(on.size(), PreemptionSite{&caps, {}});
  const auto of = [&](std::size_t i) { return on[i]; };
  const auto req = needs(4, {{"ext_ml_gang", {{"size", 4}}}});
  auto plan = plan_gang_capacity_preemption(req, 2, 4, sites, of);
  EXPECT_EQ(plan.fitting, 0);
  ASSERT_EQ(plan.freed.size(), 4u);
  for (const auto& [site, choice] : plan.freed) {
    EXPECT_NE(site, 0u);
    ASSERT_EQ(choice.victims.size(), 1u);
    EXPECT_TRUE(choice.victims[0].leaves);
  }

  // With two members to spare, two leave and the rest would take the whole gang: the
  // plan takes the whole gang on rank 0's worker only as the last resort.
  for (int w = 1; w < 8; ++w) on[w][0].gang_spare = 2;
  plan = plan_gang_capacity_preemption(req, 2, 4, sites, of);
  EXPECT_TRUE(plan.freed.empty()) << "two leavers and rank 0's worker are three workers, not four";

  // Workers that take a member now count first: nothing is preempted for them.
  on[1].clear();
  on[2].clear();
  plan = plan_gang_capacity_preemption(req, 2, 4, sites, of);
  EXPECT_EQ(plan.fitting, 2);
  ASSERT_EQ(plan.freed.size(), 2u);
  for (const auto& [site, choice] : plan.freed) EXPECT_TRUE(choice.victims[0].leaves);

  // Never preempt for a gang that still could not start.
  EXPECT_TRUE(plan_gang_capacity_preemption(req, 2, 9, sites, of).freed.empty());
}

namespace {

// A member of a running elastic gang as preemption reads it.
RunningJob elastic_member(const std::string& gang, int now, int min, const std::string& tenant = "", int rank = 1,
                          const std::string& queue = "q") {
  RunningJob r;
  r.job_id = gang;
  r.queue = queue;
  r.tenant = tenant;
  r.class_rank = rank;
  r.gang_now = now;
  r.gang_min = min;
  return r;
}

}  // namespace

TEST(ElasticShareShrink, AGangGivesOnlyWhatLiesAboveItsShareAndItsMinimum) {
  const auto equal = [](const std::string&) { return 1.0; };
  // a holds 8, b waits: each a share of 4, a gives 4 (a gang appears once per member).
  auto spare = spare_above_share({elastic_member("a", 8, 2), elastic_member("a", 8, 2)}, {"q", 1, "", 0}, equal);
  EXPECT_EQ(spare, (std::map<std::string, int>{{"a", 4}}));
  // a at 6 and b at 2 running, c waits: shares of 8/3 rounded up to 3; b has none to give.
  spare = spare_above_share({elastic_member("a", 6, 2), elastic_member("b", 2, 2)}, {"q", 1, "", 0}, equal);
  EXPECT_EQ(spare, (std::map<std::string, int>{{"a", 3}}));
  // The minimum holds above the share: a 6..8 gang at 8 gives 2.
  EXPECT_EQ(spare_above_share({elastic_member("a", 8, 6)}, {"q", 1, "", 0}, equal), (std::map<std::string, int>{{"a", 2}}));
  // Gangs of another class rank or queue are not its equals.
  EXPECT_TRUE(spare_above_share({elastic_member("a", 8, 2, "", 2), elastic_member("x", 8, 2, "", 1, "other")}, {"q", 1, "", 0}, equal)
                  .empty());
  // A waiting gang's held members count: 8 + 2 held, shares of 5.
  EXPECT_EQ(spare_above_share({elastic_member("a", 8, 2)}, {"q", 1, "", 2}, equal), (std::map<std::string, int>{{"a", 3}}));
}

TEST(ElasticShareShrink, UnderFairTheSharesFollowTheTenantsWeights) {
  const auto weights = [](const std::string& t) { return t == "team-b" ? 3.0 : 1.0; };
  // team-a holds 8, team-b (3) waits: team-a keeps 2 of 8.
  EXPECT_EQ(spare_above_share({elastic_member("a", 8, 2, "team-a")}, {"q", 1, "team-b", 0}, weights),
            (std::map<std::string, int>{{"a", 6}}));
  // team-b holds 8, team-a (1) waits: team-b keeps 6.
  EXPECT_EQ(spare_above_share({elastic_member("b", 8, 2, "team-b")}, {"q", 1, "team-a", 0}, weights),
            (std::map<std::string, int>{{"b", 2}}));
}

namespace {

// A spot 2..8 gang holding 8 members of 4 GPUs, all 32 of its queue's budget: the
// budget, the gang as one charged job, and its members but rank 0, each free to leave.
struct GangFillingItsBudget {
  QueueBudget budget;
  std::vector<RunningJob> charged = {running("gang", 0, 32, 60000)};
  std::vector<RunningJob> members;
  GangFillingItsBudget() {
    budget.max_gpus = 32;
    budget.gpus_in_use = 32;
    budget.gpu_jobs = 1;
    for (int rank = 1; rank < 8; ++rank) {
      auto m = running("gang", 0, 4, 60000);
      m.worker_id = "w" + std::to_string(rank + 1);
      m.leaves = true;
      m.gang_spare = 6;
      members.push_back(m);
    }
  }
};

}  // namespace

TEST(BudgetVictims, MembersLeaveElasticGangsBeforeWholeJobsGo) {
  GangFillingItsBudget gang;
  auto& [budget, charged, members] = gang;
  // A reserved 8-GPU job: two members leave, the gang runs on with six.
  auto choice = choose_budget_leavers({8, 1, 0, 0}, 2, budget, charged, members);
  ASSERT_TRUE(choice);
  ASSERT_EQ(choice->victims.size(), 2u);
  for (const auto& v : choice->victims) EXPECT_TRUE(v.leaves);
  // 28 GPUs would take it below its minimum of 2 (6 may leave: 24 GPUs): whole jobs then.
  EXPECT_FALSE(choose_budget_leavers({28, 1, 0, 0}, 2, budget, charged, members));
  // A member already leaving counts as freed: one more is enough for 8.
  members[0].preempting = true;
  members[0].leaves = false;
  choice = choose_budget_leavers({8, 1, 0, 0}, 2, budget, charged, members);
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->victims.size(), 1u);
  // An equal or higher class is never a victim.
  EXPECT_FALSE(choose_budget_leavers({8, 1, 0, 0}, 0, budget, charged, members));
}

TEST(BudgetVictims, AMemberLeavingFromAnEarlierPassIsEnoughAndNothingMoreGoes) {
  GangFillingItsBudget gang;
  auto& [budget, charged, members] = gang;
  // The first pass: one member leaves for a 4-GPU job.
  auto choice = choose_budget_preemption({4, 1, 0, 0}, 2, budget, charged, members);
  ASSERT_TRUE(choice);
  ASSERT_EQ(choice->victims.size(), 1u);
  EXPECT_TRUE(choice->victims[0].leaves);
  // The next pass, before it has left: its GPUs count as freed, nothing more goes (the
  // whole gang went here before).
  members[0].preempting = true;
  members[0].leaves = false;
  EXPECT_FALSE(choose_budget_preemption({4, 1, 0, 0}, 2, budget, charged, members));
  // Leaving members that cannot free enough: whole jobs.
  members[0].preempting = false;
  members[0].leaves = true;
  choice = choose_budget_preemption({28, 1, 0, 0}, 2, budget, charged, members);
  ASSERT_TRUE(choice);
  EXPECT_FALSE(choice->victims[0].leaves);
}

// A waiting elastic gang takes members above an equal gang's share, but not while
// another gang forms in the queue: one gang forms at a time, so the freed workers
// would be held for a gang that cannot take them, and the shrunk gang would grow back.
TEST(ElasticShareShrink, NothingIsFreedForAWaitingGangWhileAnotherForms) {
  const auto caps = gpus(4);
  std::vector<std::vector<RunningJob>> on;
  for (int w = 0; w < 8; ++w) {
    RunningJob r = w == 0 ? running("el", 1, 4, 5000) : member("el", "w" + std::to_string(w), 4, 5000, 6);
    r.class_rank = 1;
    r.queue = "q";
    r.gang_now = 8;
    r.gang_min = 2;
    on.push_back({r});
  }
  const std::vector<PreemptionSite> sites(on.size(), PreemptionSite{&caps, {}});
  const auto of = [&](std::size_t i) { return on[i]; };
  const auto req = needs(4, {{"ext_ml_gang", {{"min_size", 2}, {"max_size", 8}}}});
  const auto equal = [](const std::string&) { return 1.0; };
  WaitingElasticGang waiting{"q", 1, "", 0};
  auto plan = plan_share_shrink(waiting, req, 2, sites, of, {}, {}, equal);
  ASSERT_EQ(plan.freed.size(), 2u) << "a gang at 8 of an equal share of 4 gives two members";
  waiting.another_forming = true;
  plan = plan_share_shrink(waiting, req, 2, sites, of, {}, {}, equal);
  EXPECT_TRUE(plan.freed.empty());
}
