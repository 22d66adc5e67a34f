// Backfill rules (broker/preemption/backfill.*, broker/scheduling/backfill_guard.*): pure, no Redis.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "broker/preemption/backfill.hpp"
#include "broker/scheduling/backfill_guard.hpp"
#include "broker/store/priority_score.hpp"
#include "ojs/ml/capabilities.hpp"
#include "ojs/ml/requirements.hpp"

using namespace ojs::broker;
using nlohmann::json;

namespace {

ojs::ml::Capabilities gpus(int count) {
  return ojs::ml::parse_capabilities({{"accelerator", "gpu"}, {"gpu", {{"type", "nvidia-a100"}, {"count", count}, {"memory_gb", 80}}}});
}

ojs::ml::Requirements needs(int count) { return ojs::ml::parse_requirements({{"type", "t"}, {"ext_ml_gpu_count", count}}); }

RunningJob running(const std::string& id, int gpus_held, std::optional<std::int64_t> end) {
  RunningJob r;
  r.job_id = id;
  r.gpus = gpus_held;
  r.declared_end_ms = end;
  return r;
}

}  // namespace

TEST(Backfill, DeclaredEndIsTheEstimateCappedByTheExecutionDeadline) {
  EXPECT_EQ(declared_end(1000, 60, std::nullopt), 61000);
  EXPECT_EQ(declared_end(1000, 60, 30000), 30000);
  EXPECT_EQ(declared_end(1000, std::nullopt, 30000), 30000);
  EXPECT_EQ(declared_end(1000, std::nullopt, std::nullopt), std::nullopt);
}

TEST(Backfill, EarliestStartIsWhenEnoughDeclaredEndsHavePassed) {
  const auto caps = gpus(8);
  const std::vector<RunningJob> jobs{running("a", 4, 50000), running("b", 2, 20000), running("c", 2, 90000)};
  EXPECT_EQ(earliest_start(needs(2), caps, jobs, 1000), 20000);  // b leaves first
  EXPECT_EQ(earliest_start(needs(2), caps, {running("a", 4, 50000)}, 1000), 1000);  // fits now
  EXPECT_EQ(earliest_start(needs(4), caps, jobs, 1000), 50000);  // b then a leave
  EXPECT_EQ(earliest_start(needs(8), caps, jobs, 1000), 90000);
  EXPECT_EQ(earliest_start(needs(16), caps, jobs, 1000), std::nullopt);  // never fits
  // A job that declared no end never leaves.
  const std::vector<RunningJob> open{running("a", 6, std::nullopt), running("b", 2, 20000)};
  EXPECT_EQ(earliest_start(needs(2), caps, open, 1000), 20000);
  EXPECT_EQ(earliest_start(needs(4), caps, open, 1000), std::nullopt);
}

TEST(Backfill, PlanPicksTheSoonestWorkerOrNoneWhenItFitsNow) {
  const auto eight = gpus(8);
  std::vector<BackfillCandidate> candidates{{&eight, {running("a", 8, 70000)}, {}}, {&eight, {running("b", 8, 30000)}, {}}};
  auto plan = plan_backfill(needs(8), candidates, 1000);
  EXPECT_FALSE(plan.fits_now);
  EXPECT_EQ(plan.candidate, 1);
  EXPECT_EQ(plan.start_ms, 30000);
  candidates.push_back({&eight, {running("c", 4, std::nullopt)}, {}});
  EXPECT_FALSE(plan_backfill(needs(8), candidates, 1000).fits_now);
  EXPECT_TRUE(plan_backfill(needs(4), candidates, 1000).fits_now);
}

TEST(Backfill, HeldGpusKeepClassesThatNeedThemToJobsEndingBeforeTheStart) {
  const auto caps = gpus(8);
  ojs::ml::WorkerLoad load;
  load.active.push_back({"a", 4, {}, {}, std::nullopt});  // 4 free
  EXPECT_EQ(backfill_held_gpus(caps, load, 8), 4);
  EXPECT_EQ(backfill_held_gpus(caps, load, 2), 2);
  std::vector<int> devices;
  EXPECT_EQ(fits_beside_hold(needs(2), caps, load, 4, {}, &devices), Beside::needs_held);
  EXPECT_EQ(fits_beside_hold(needs(2), caps, load, 2, {}, &devices), Beside::fits);
  EXPECT_EQ(fits_beside_hold(needs(6), caps, load, 2, {}, &devices), Beside::no);
}

TEST(Backfill, LargerJobsAreReservedFirstThenBandThenFifo) {
  const double spot = rank_base(0, 0), reserved = rank_base(2, 0);
  EXPECT_LT(backfill_order(spot + 9, 8), backfill_order(reserved + 1, 2));
  EXPECT_LT(backfill_order(reserved + 5, 8), backfill_order(spot + 1, 8));
  EXPECT_LT(backfill_order(spot + 1, 4), backfill_order(spot + 2, 4));
}

// A drained device is never free: the plan waits for the jobs that hold the others.
TEST(Backfill, EarliestStartLeavesDrainedDevicesOut) {
  const auto caps = ojs::ml::parse_capabilities(
      {{"accelerator", "gpu"}, {"gpu", {{"type", "nvidia-a100"}, {"count", 4}, {"memory_gb", 80}}},
       {"devices", {{{"index", 0}, {"memory_gb", 80}}, {{"index", 1}, {"memory_gb", 80}}, {{"index", 2}, {"memory_gb", 80}},
                    {{"index", 3}, {"memory_gb", 80}}}}});
  auto a = running("a", 1, 20000);
  a.devices = {0};
  auto b = running("b", 1, 50000);
  b.devices = {1};
  EXPECT_EQ(earliest_start(needs(3), caps, {a, b}, 1000), 20000);  // devices 2, 3 and a's
  EXPECT_EQ(earliest_start(needs(3), caps, {a, b}, 1000, {}, /*drained=*/{3}), 50000);  // 3 is out: b must leave too
  EXPECT_EQ(earliest_start(needs(4), caps, {a, b}, 1000, {}, {3}), std::nullopt);
}
