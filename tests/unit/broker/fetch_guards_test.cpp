// FETCH's filters over what is already read (no Redis): Scheduler::judge on a clock it
// is given, and the capacity guards over marks held in memory, as the cluster
// simulator (bench/simulator/sim.cpp) runs them.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>

#include "broker/scheduling/capacity_guard_filter.hpp"
#include "broker/scheduling/locality_hold_filter.hpp"
#include "broker/scheduling/scheduler.hpp"
#include "ojs/ml/capabilities.hpp"
#include "ojs/ml/requirement_class.hpp"
#include "ojs/ml/requirements.hpp"

using namespace ojs::broker;
using nlohmann::json;

namespace {

ojs::ml::Capabilities gpus(int count) {
  json devices = json::array();
  for (int i = 0; i < count; ++i) devices.push_back({{"index", i}, {"memory_gb", 80}});
  return ojs::ml::parse_capabilities(
      {{"accelerator", "gpu"}, {"gpu", {{"type", "nvidia-a100"}, {"count", count}, {"memory_gb", 80}}}, {"devices", devices}});
}

// A class of jobs needing `count` GPUs (and, when given, preferring a model), added to `set`.
std::string add_class(ClassSet& set, int count, const std::string& model = "") {
  json doc = {{"type", "t"}, {"ext_ml_gpu_count", count}};
  if (!model.empty()) doc["ext_ml_model_id"] = model;
  const auto cls = ojs::ml::requirement_class(ojs::ml::parse_requirements(doc));
  set.classes.emplace(cls.id, cls.canonical);
  return cls.id;
}

WorkerView worker(const ojs::ml::Capabilities& caps, int busy) {
  WorkerView w;
  w.worker_id = "w1";
  w.capabilities = caps;
  w.fingerprint = ojs::ml::fingerprint(caps);
  std::vector<int> devices;
  for (int d = 0; d < busy; ++d) devices.push_back(d);
  ojs::ml::ActiveJob running;
  running.job_id = "running";
  running.gpus = busy;
  w.load.active.push_back(running);
  w.load.hold(devices);
  return w;
}

const ClassVerdict& verdict_of(const std::vector<ClassVerdict>& verdicts, const std::string& id) {
  return *std::find_if(verdicts.begin(), verdicts.end(), [&](const ClassVerdict& v) { return v.class_id == id; });
}

}  // namespace

TEST(FetchGuards, TheLocalityHoldIsCutOnTheSchedulersClock) {
  SchedulerOptions options;
  options.locality_delay_ms = 1000;
  options.clock = [] { return std::int64_t{50000}; };
  const Scheduler scheduler(options);
  ClassSet set;
  const auto cold = add_class(set, 1, "llama-70b");
  const auto verdicts = scheduler.judge(set, worker(gpus(8), 0));
  const auto& v = verdict_of(verdicts, cold);
  ASSERT_TRUE(v.judgement.eligible());  // the hold is per job: the class stays eligible
  ASSERT_EQ(v.judgement.holds.size(), 1u);
  EXPECT_EQ(v.judgement.holds[0].code, ojs::ml::VerdictCode::held);
  EXPECT_EQ(v.claim.hold_enqueued_after_ms, 49000);  // claim.lua skips jobs enqueued after it
  EXPECT_TRUE(hold_applies(v.judgement.holds[0], 49500, 50000));
  EXPECT_FALSE(hold_applies(v.judgement.holds[0], 48000, 50000));
}

TEST(FetchGuards, NoHoldLeavesTheVerdictsAsJudged) {
  const Scheduler scheduler;
  ClassSet set;
  const auto two = add_class(set, 2);
  const auto view = worker(gpus(8), 4);
  auto verdicts = scheduler.judge(set, view);
  const auto before = verdict_of(verdicts, two).judgement.devices;
  apply_capacity_guards(CapacityGuards{std::nullopt, {}, 1000}, scheduler, "q", set, view, verdicts, {});
  EXPECT_TRUE(verdict_of(verdicts, two).judgement.eligible());
  EXPECT_EQ(verdict_of(verdicts, two).judgement.devices, before);
  EXPECT_EQ(verdict_of(verdicts, two).claim.backfill_before_ms, 0);
}

TEST(FetchGuards, AReservationsGpusGoOnlyToJobsEndingBeforeItsStart) {
  const Scheduler scheduler;
  ClassSet set;
  const auto two = add_class(set, 2);
  const auto four = add_class(set, 4);
  const auto view = worker(gpus(8), 4);  // 4 free, all 4 held for the reserved job
  CapacityHold hold;
  hold.worker_id = "w1";
  hold.for_job = "big";
  hold.queue = "q";
  hold.class_id = four;
  hold.backfill_start_ms = 90000;
  hold.until_ms = 100000;
  hold.gpus = 4;
  auto verdicts = scheduler.judge(set, view);
  apply_capacity_guards(CapacityGuards{hold, {}, 1000}, scheduler, "q", set, view, verdicts, {});
  EXPECT_TRUE(verdict_of(verdicts, two).judgement.eligible());
  EXPECT_EQ(verdict_of(verdicts, two).claim.backfill_before_ms, 90000);
  EXPECT_EQ(verdict_of(verdicts, four).claim.backfill_before_ms, 0);  // the reserved class itself
}

TEST(FetchGuards, GpusFreedByPreemptionAreHeldForThePreemptorsClass) {
  const Scheduler scheduler;
  ClassSet set;
  const auto two = add_class(set, 2);
  const auto eight = add_class(set, 8);
  const auto view = worker(gpus(8), 4);  // the victim runs out its grace period on 4
  RunningJob victim;
  victim.job_id = "running";
  victim.gpus = 4;
  victim.devices = {0, 1, 2, 3};
  CapacityHold hold;
  hold.worker_id = "w1";
  hold.for_job = "preemptor";
  hold.queue = "q";
  hold.class_id = eight;
  hold.victims = {victim};
  hold.until_ms = 100000;
  hold.gpus = 8;
  auto verdicts = scheduler.judge(set, view);
  ASSERT_TRUE(verdict_of(verdicts, two).judgement.eligible());
  apply_capacity_guards(CapacityGuards{hold, {}, 1000}, scheduler, "q", set, view, verdicts, {});
  const auto& other = verdict_of(verdicts, two).judgement;
  ASSERT_FALSE(other.eligible());
  EXPECT_EQ(other.refusals.back().predicate, "capacity_hold");
  EXPECT_EQ(other.code(), ojs::ml::VerdictCode::held);
  EXPECT_EQ(verdict_of(verdicts, eight).judgement.code(), ojs::ml::VerdictCode::preemptible);  // preemption_pending
}
