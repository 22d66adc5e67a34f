// The forward run (broker/estimate/forecast.*): pure, no Redis.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "broker/estimate/forecast.hpp"
#include "ojs/ml/capabilities.hpp"
#include "ojs/ml/requirements.hpp"

using namespace ojs::broker;
using namespace ojs::broker::estimate;

namespace {

ojs::ml::Capabilities gpus(int count) {
  return ojs::ml::parse_capabilities({{"accelerator", "gpu"}, {"gpu", {{"type", "nvidia-a100"}, {"count", count}, {"memory_gb", 80}}}});
}

const ojs::ml::Requirements& needs(int count) {
  static std::map<int, ojs::ml::Requirements> memo;
  auto it = memo.find(count);
  if (it == memo.end()) it = memo.emplace(count, ojs::ml::parse_requirements({{"type", "t"}, {"ext_ml_gpu_count", count}})).first;
  return it->second;
}

Running running(const std::string& id, int held, std::optional<std::int64_t> end, bool charged = true) {
  Running r;
  r.job.job_id = id;
  r.job.gpus = held;
  r.job.declared_end_ms = end;
  r.source = end ? EndSource::declared : EndSource::unknown;
  r.charged = charged;
  return r;
}

// A spot job on one GPU that may be preempted, running until far ahead.
Running spot_victim(const std::string& id, int grace_period_s, std::int64_t lost_ms) {
  Running r = running(id, 1, 36000000);
  r.job.class_rank = 0;
  r.job.preemptible = true;
  r.job.grace_period_s = grace_period_s;
  r.job.lost_ms = lost_ms;
  return r;
}

Waiting waiting(const std::string& id, int count, std::optional<std::int64_t> run_ms, double score) {
  Waiting w;
  w.id = id;
  w.class_id = "c" + std::to_string(count);
  w.req = &needs(count);
  w.score = score;
  w.run_ms = run_ms;
  w.run_source = run_ms ? EndSource::declared : EndSource::unknown;
  return w;
}

}  // namespace

TEST(EstimateForecast, WaitsForTheRunningJobsThatFreeEnoughGpus) {
  Snapshot s;
  s.now_ms = 1000;
  s.workers.push_back({"w1", gpus(2), {running("a", 1, 61000), running("b", 1, 121000)}, {}});
  s.waiting = {waiting("big", 2, 5000, 1), waiting("small", 1, 5000, 2)};
  const auto big = estimate_start(s, "big");
  ASSERT_EQ(big.status, Estimate::Status::estimated);
  EXPECT_EQ(big.start_ms, 121000);
  EXPECT_EQ(big.running_ends.at(EndSource::declared), 2);
  EXPECT_EQ(rests_on(big), "2 running jobs' declared ends; 0 jobs ahead");
  const auto small = estimate_start(s, "small");  // passes the big job, which cannot use one GPU
  EXPECT_EQ(small.start_ms, 61000);
  EXPECT_EQ(small.jobs_ahead, 1);
  EXPECT_EQ(small.placed_ahead, 0);
}

TEST(EstimateForecast, BudgetKeepsAJobAnIdleWorkerCouldTake) {
  Snapshot s;
  s.now_ms = 0;
  s.workers.push_back({"w1", gpus(8), {running("r", 2, 900000)}, {}});
  s.limits.budget.max_gpus = 2;
  s.limits.budget.gpus_in_use = 2;
  s.limits.budget.gpu_jobs = 1;
  s.waiting = {waiting("j", 2, 1000, 1)};
  const auto e = estimate_start(s, "j");
  EXPECT_EQ(e.start_ms, 900000);
  EXPECT_EQ(e.kept_by, std::vector<std::string>{"max_total_gpus"});
  s.limits.budget.max_gpus = 1;  // never: more than the whole budget
  EXPECT_EQ(estimate_start(s, "j").status, Estimate::Status::unresolvable);
}

// max_total_tpu_chips keeps a TPU job off an idle TPU worker until a charged TPU job
// ends and gives its chips back; a job needing more chips than the limit never starts.
TEST(EstimateForecast, TheTpuChipBudgetKeepsATpuJobUntilChipsAreGivenBack) {
  const auto tpu16 = ojs::ml::parse_capabilities({{"accelerator", "tpu"}, {"tpu", {{"type", "v5e"}, {"chip_count", 16}}}});
  const auto pod = ojs::ml::parse_requirements({{"type", "t"}, {"ext_ml_tpu_type", "v5e"}, {"ext_ml_tpu_chip_count", 16}});
  Snapshot s;
  s.now_ms = 0;
  Running r = running("r", 0, 900000);
  r.job.tpu_chips = 16;
  r.tpu_chips = 16;
  s.workers.push_back({"w1", tpu16, {r}, {}});
  s.workers.push_back({"w2", tpu16, {}, {}});
  s.limits.budget.max_tpu_chips = 16;
  s.limits.budget.tpu_chips_in_use = 16;
  Waiting first = waiting("j", 1, 1000, 1), second = waiting("k", 1, 1000, 2);
  first.class_id = second.class_id = "pod";
  first.req = second.req = &pod;
  s.waiting = {first, second};
  const auto e = estimate_start(s, "j");
  ASSERT_EQ(e.status, Estimate::Status::estimated) << e.reason;
  EXPECT_EQ(e.start_ms, 900000) << "w2 is idle, the budget is not";
  EXPECT_EQ(e.kept_by, std::vector<std::string>{"max_total_tpu_chips"});
  EXPECT_EQ(estimate_start(s, "k").start_ms, 901000) << "the first one's chips are charged until it ends";
  s.limits.budget.max_tpu_chips = 8;  // never: more than the whole budget
  EXPECT_EQ(estimate_start(s, "j").status, Estimate::Status::unresolvable);
}

TEST(EstimateForecast, UnknownBehindAJobWithoutAnEndAndUnresolvableOnTheWrongHardware) {
  Snapshot s;
  s.workers.push_back({"w1", gpus(1), {running("forever", 1, std::nullopt)}, {}});
  s.waiting = {waiting("j", 1, 1000, 1), waiting("huge", 4, 1000, 2)};
  const auto e = estimate_start(s, "j");
  EXPECT_EQ(e.status, Estimate::Status::unknown);
  EXPECT_NE(e.reason.find("declare no end"), std::string::npos) << e.reason;
  EXPECT_EQ(estimate_start(s, "huge").status, Estimate::Status::unresolvable);
}

TEST(EstimateForecast, ForecastListsPlacementsInStartOrder) {
  Snapshot s;
  s.now_ms = 0;
  s.workers.push_back({"w1", gpus(1), {}, {}});
  s.waiting = {waiting("a", 1, 10, 1), waiting("b", 1, 20, 2), waiting("c", 1, std::nullopt, 3), waiting("d", 1, 5, 4)};
  const auto f = forecast(s, 10);
  ASSERT_EQ(f.size(), 3u);  // d waits behind c, which never ends
  EXPECT_EQ(f[0].job_id, "a");
  EXPECT_EQ(f[1].start_ms, 10);
  EXPECT_EQ(f[2].job_id, "c");
  EXPECT_FALSE(f[2].end_ms.has_value());
  EXPECT_EQ(forecast(s, 1).size(), 1u);
}

// Declared durations are off: what completed jobs ran against what they declared
// says when a running job ends, also one already past its declared end.
TEST(EstimateForecast, OverrunsFromCompletedJobsMoveTheEnds) {
  const auto none = Overruns::of({});
  EXPECT_EQ(none.end(0, 1000, 500), 1000);   // declared end
  EXPECT_EQ(none.end(0, 1000, 1500), 1500);  // past it: now
  EXPECT_EQ(none.run(1000), 1000);
  const auto learned = Overruns::of({1.2, 0.9, 1.1, 1.0, 0.8});
  EXPECT_EQ(learned.ratios.front(), 0.8);
  EXPECT_EQ(learned.end(0, 1000, 100), 1000);   // the median of all five
  EXPECT_EQ(learned.end(0, 1000, 1050), 1200);  // of 1.1 and 1.2 (still ahead): the upper one
  EXPECT_EQ(learned.end(0, 1000, 1150), 1200);  // only 1.2 is ahead
  EXPECT_EQ(learned.end(0, 1000, 1300), 1300);  // past them all: now
  EXPECT_EQ(learned.run(2000), 2000);
  EXPECT_EQ(Overruns::of({2.0, 2.0, 3.0}).run(1000), 2000);
}

// start_at_p90: the same run with every learned quantity at its 90th percentile.
TEST(EstimateForecast, TheLateStartTakesTheLearnedSpreadAtItsNinetiethPercentile) {
  std::vector<double> ratios;
  for (int i = 1; i <= 10; ++i) ratios.push_back(0.5 + 0.1 * i);  // 0.6 .. 1.5
  const auto learned = Overruns::of(ratios);
  EXPECT_EQ(learned.run(1000, kLateQuantile), 1500);  // the tenth of ten
  EXPECT_EQ(learned.run(1000), 1100);                 // the (upper) median
  EXPECT_EQ(learned.end(0, 1000, 1250, kLateQuantile), 1500);  // of 1.3, 1.4, 1.5 still ahead

  Snapshot s;
  s.now_ms = 0;
  auto r = running("r", 1, 60000);
  s.workers.push_back({"w1", gpus(1), {r}, {}});
  s.waiting = {waiting("a", 1, 10000, 1), waiting("b", 1, 10000, 2)};
  auto e = estimate_range(s, "b");
  ASSERT_EQ(e.status, Estimate::Status::estimated);
  EXPECT_EQ(e.start_ms, 70000);
  EXPECT_EQ(e.late_start_ms, 70000);  // nothing learned: no spread
  EXPECT_FALSE(has_spread(s));

  s.workers[0].running[0].late_end_ms = 90000;
  s.waiting[0].late_run_ms = 15000;
  EXPECT_TRUE(has_spread(s));
  e = estimate_range(s, "b");
  EXPECT_EQ(e.start_ms, 70000);
  EXPECT_EQ(e.late_start_ms, 105000);  // its worker frees late, the job ahead runs late
  EXPECT_EQ(to_json(e, 0).value("start_at_p90", ""), "1970-01-01T00:01:45.000Z");
  const auto f = forecast(s, 2);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].late_start_ms, 90000);
  EXPECT_EQ(f[1].late_start_ms, 105000);
  EXPECT_EQ(to_json(f[1]).value("start_at_p90", ""), "1970-01-01T00:01:45.000Z");
}

// A job that may preempt (above spot) and fits no worker starts once its
// victims' grace period ends, as the controller would free the worker for it.
TEST(EstimateForecast, AHigherClassJobStartsAfterItsVictimsGracePeriod) {
  Snapshot s;
  s.now_ms = 1000;
  s.workers.push_back({"w1", gpus(1), {spot_victim("spot", 120, 5000)}, {}});
  Waiting reserved = waiting("reserved", 1, 60000, 1);
  reserved.class_rank = 2;
  Waiting later = waiting("later", 1, 60000, 2);
  later.class_rank = 0;  // spot: it preempts nobody, and the freed worker is held for the reserved job
  s.waiting = {reserved, later};
  const auto e = estimate_start(s, "reserved");
  ASSERT_EQ(e.status, Estimate::Status::estimated);
  EXPECT_EQ(e.start_ms, 1000 + 120000);
  EXPECT_EQ(e.preempts, std::vector<std::string>{"spot"});
  EXPECT_EQ(e.running_ends.at(EndSource::preempted), 1);
  EXPECT_NE(rests_on(e).find("the preemption of 1 lower-class running job for it"), std::string::npos) << rests_on(e);
  EXPECT_EQ(to_json(e, s.now_ms)["preempts"], nlohmann::json::array({"spot"}));
  EXPECT_EQ(estimate_start(s, "later").start_ms, 1000 + 120000 + 60000);  // after the reserved job's run

  // A spot job does not preempt; nor is a job that is not preemptible preempted.
  s.waiting = {later};
  EXPECT_EQ(estimate_start(s, "later").start_ms, 36000000);
  s.waiting = {reserved};
  s.workers[0].running[0].job.preemptible = false;
  EXPECT_EQ(estimate_start(s, "reserved").start_ms, 36000000);
  EXPECT_TRUE(estimate_start(s, "reserved").preempts.empty());

  // A preemption the controller already started: the worker is held for it.
  s.workers[0].running[0].job.preemptible = true;
  s.workers[0].running[0].job.preempting = true;
  s.workers[0].running[0].job.declared_end_ms = 31000;
  s.workers[0].running[0].source = EndSource::preempted;
  s.holds = {{"w1", "reserved", "c1", 41000, {"spot"}}};
  later.score = 0.5;  // even a job of another class ahead in the queue does not take the held worker
  later.class_id = "other";
  s.waiting = {later, reserved};
  const auto held = estimate_start(s, "reserved");
  EXPECT_EQ(held.start_ms, 31000);
  EXPECT_EQ(held.preempts, std::vector<std::string>{"spot"});
  EXPECT_EQ(estimate_start(s, "later").start_ms, 31000 + 60000);
}

// The late start is widened by the 90th percentile of how late jobs told one a minute
// or more away started against it, once 20 have; never narrowed.
TEST(EstimateForecast, TheLateStartIsCalibratedByHowJobsStartedAgainstTheirs) {
  EXPECT_FALSE(started_vs_late(0, 59999, 100000).has_value());  // told it starts within the minute
  EXPECT_DOUBLE_EQ(*started_vs_late(0, 100000, 250000), 2.5);
  std::vector<double> ratios(19, 2.0);
  EXPECT_EQ(LateCalibration::of(ratios).widen(1000, 61000), 61000);  // too few
  ratios.push_back(2.0);
  EXPECT_EQ(LateCalibration::of(ratios).widen(1000, 61000), 1000 + 120000);
  EXPECT_EQ(LateCalibration::of(ratios).widen(1000, 1000), 1000);  // told now: now
  EXPECT_EQ(LateCalibration::of(std::vector<double>(20, 0.5)).widen(1000, 61000), 61000);  // never narrower
  std::vector<double> spread;
  for (int i = 1; i <= 20; ++i) spread.push_back(i * 0.25);  // 0.25 .. 5: the 90th percentile is the 19th
  EXPECT_EQ(LateCalibration::of(spread).widen(0, 100000), 475000);
}

// A job under its minimum run time is spared as a victim while it is young, and only
// then: a preemption the run makes later picks it like any other.
TEST(EstimateForecast, AYoungVictimIsSparedOnlyUntilItsMinimumRunTimeHasPassed) {
  Snapshot s;
  s.now_ms = 1000;
  Running young = spot_victim("young", 10, 1000);  // the least work lost: the first victim once it may be one
  young.job.young_until_ms = 600000;
  young.job.young = true;
  s.workers.push_back({"w1", gpus(2), {young, spot_victim("old", 120, 50000)}, {}});
  Waiting reserved = waiting("reserved", 1, 60000, 1);
  reserved.class_rank = 2;
  s.waiting = {reserved};
  auto e = estimate_start(s, "reserved");  // now: the young job is spared
  EXPECT_EQ(e.preempts, std::vector<std::string>{"old"});
  EXPECT_EQ(e.start_ms, 1000 + 120000);
  s.waiting[0].due_ms = 700000;  // due after the young job's minimum run time
  e = estimate_start(s, "reserved");
  EXPECT_EQ(e.preempts, std::vector<std::string>{"young"});
  EXPECT_EQ(e.start_ms, 700000 + 10000);
}

// A running job that reported progress (the OJS progress extension) ends
// where its progress says, not at its declared end, once the report is to be trusted.
TEST(EstimateForecast, ReportedProgressSaysWhenARunningJobEnds) {
  EXPECT_EQ(progress_end(0, {0.5, 30000}, 40000), 60000);  // half done after 30 s: 30 s more
  EXPECT_EQ(progress_end(0, {0.5, 30000}, 70000), 70000);  // past that: now
  EXPECT_FALSE(progress_end(0, {0.05, 3000}, 4000));       // below kProgressTrusted
  EXPECT_FALSE(progress_end(0, {1.0, 30000}, 40000));      // done: its other end stands
  EXPECT_FALSE(progress_end(10000, {0.5, 5000}, 20000));   // a previous attempt's report
  EXPECT_FALSE(progress_end(0, {0, 0}, 20000));            // none reported

  Snapshot s;
  s.now_ms = 40000;
  Running r = running("half", 1, 100000);  // declared to end at 100 s
  const auto end = progress_end(0, {0.5, 30000}, s.now_ms);
  ASSERT_TRUE(end);
  r.job.declared_end_ms = end;
  r.source = EndSource::progress;
  s.workers.push_back({"w1", gpus(1), {r}, {}});
  s.waiting = {waiting("j", 1, 5000, 1)};
  const auto e = estimate_start(s, "j");
  ASSERT_EQ(e.status, Estimate::Status::estimated);
  EXPECT_EQ(e.start_ms, 60000);
  EXPECT_EQ(e.running_ends.at(EndSource::progress), 1);
  EXPECT_EQ(rests_on(e), "1 running job's reported progress; 0 jobs ahead");
  EXPECT_EQ(to_json(e, s.now_ms)["running_ends"]["progress"], 1);
}

// A job's pace is measured from its attempt's first report above 0, past the setup in
// which it reported nothing: 2 min of setup, then 10 min of work.
TEST(EstimateForecast, ThePaceSinceTheFirstReportLeavesTheSetupOut) {
  const std::int64_t setup = 120000, work = 600000;
  const auto at = [&](std::int64_t t) { return static_cast<double>(t - setup) / static_cast<double>(work); };
  // At 4 min it reported 0.2 (first report 0.1 at 3 min): 8 min of work left, at the work's pace.
  const Progress p{at(240000), 240000, at(180000), 180000};
  EXPECT_EQ(progress_end(0, p, 240000), setup + work);
  // Without the first report, elapsed / fraction spreads the setup over the run: 20 min.
  EXPECT_EQ(progress_end(0, {at(240000), 240000}, 240000), 1200000);
  // Less than kPaceSpan since the first report: the elapsed rule, once past kProgressTrusted.
  EXPECT_EQ(progress_end(0, {0.12, 120000, 0.09, 100000}, 120000), 1000000);
  EXPECT_FALSE(progress_end(0, {0.08, 120000, 0.05, 100000}, 120000));
  // A first report of a previous attempt (before this start) is not a base.
  EXPECT_EQ(progress_end(200000, {0.5, 300000, 0.4, 100000}, 300000), 400000);
}

// A job resumed from a checkpoint reports its overall progress: its first report is far
// along, so the time since its start says nothing of its pace until it has made some.
TEST(EstimateForecast, AJobResumedFarAlongIsEstimatedByItsPaceNotItsStart) {
  // Resumed at 0.6, 1 min in: no pace yet; elapsed / fraction would say it ends now.
  EXPECT_FALSE(progress_end(0, {0.6, 60000, 0.6, 60000, true}, 60000));
  // 0.7 at 3 min (0.1 in 2 min): 0.3 left, 6 min more.
  EXPECT_EQ(progress_end(0, {0.7, 180000, 0.6, 60000, true}, 180000), 540000);
  // A first attempt's first report far along (it reports seldom) still counts from its start.
  EXPECT_EQ(progress_end(0, {0.6, 60000, 0.6, 60000}, 60000), 100000);
}
