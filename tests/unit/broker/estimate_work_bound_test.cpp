// The forward run's work bound (Snapshot::max_work): an estimate that would cost more
// stops, says `truncated` and why; within the bound the answer is the same as without.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "broker/estimate/forecast.hpp"
#include "ojs/ml/capabilities.hpp"
#include "ojs/ml/requirements.hpp"

using namespace ojs::broker;
using namespace ojs::broker::estimate;

namespace {

// A worker of `count` GPUs with a device inventory (what makes a check cost).
ojs::ml::Capabilities devices(int count) {
  nlohmann::json list = nlohmann::json::array();
  for (int i = 0; i < count; ++i) list.push_back({{"index", i}, {"type", "nvidia-a100"}, {"memory_gb", 80}});
  return ojs::ml::parse_capabilities(
      {{"accelerator", "gpu"}, {"gpu", {{"type", "nvidia-a100"}, {"count", count}, {"memory_gb", 80}}}, {"devices", list}});
}

const ojs::ml::Requirements& two_gpus() {
  static const auto req = ojs::ml::parse_requirements({{"type", "t"}, {"ext_ml_gpu_count", 2}});
  return req;
}

Snapshot busy_fleet(int jobs) {
  Snapshot s;
  s.now_ms = 0;
  Worker w{"big", devices(64), {}, {}};
  for (int i = 0; i < 64; ++i) {  // every device busy, each until its own end
    Running r;
    r.job.job_id = "r" + std::to_string(i);
    r.job.gpus = 1;
    r.job.devices = {i};
    r.job.declared_end_ms = 1000LL * (i + 1);
    r.source = EndSource::declared;
    w.running.push_back(r);
  }
  s.workers.push_back(w);
  for (int i = 0; i < jobs; ++i) {
    Waiting job;
    job.id = "j" + std::to_string(i);
    job.class_id = "c2";
    job.req = &two_gpus();
    job.score = i;
    job.run_ms = 3'600'000;
    job.run_source = EndSource::declared;
    s.waiting.push_back(job);
  }
  return s;
}

}  // namespace

TEST(EstimateWorkBound, AnEstimatePastTheBoundStopsAndSaysSo) {
  auto s = busy_fleet(200);
  const auto full = estimate_start(s, "j199");
  ASSERT_EQ(full.status, Estimate::Status::estimated) << full.reason;
  EXPECT_FALSE(full.truncated);

  s.max_work = 500;  // a few checks of the 64-device worker
  const auto bounded = estimate_start(s, "j199");
  EXPECT_TRUE(bounded.truncated);
  EXPECT_EQ(bounded.status, Estimate::Status::unknown);
  EXPECT_NE(bounded.reason.find("work bound"), std::string::npos) << bounded.reason;

  // The first job is placed within the bound: the same answer as without it.
  const auto first = estimate_start(s, "j0");
  EXPECT_EQ(first.status, Estimate::Status::estimated) << first.reason;
  EXPECT_EQ(first.start_ms, estimate_start(busy_fleet(200), "j0").start_ms);
}
