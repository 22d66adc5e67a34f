// A FETCH from a queue with many requirement classes judges them in the order of
// their heads, only as far as one can win (--fetch-walk-min-classes). It must hand
// out what judging every class would: the claim's order (priority band, then the
// preference bonus, then age), past classes the claim refuses, and not fair-share
// queues' order. Each case runs against a broker that always walks and one that
// never does, and both must agree.
#include <gtest/gtest.h>

#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

json dgx() { return {{"capabilities", example_worker("dgx-h100")}}; }

// `n` classes of one-GPU jobs that differ by their GPU memory (1..n GB), one job each.
std::vector<std::string> push_plain_classes(Api& api, const std::string& queue, int n, int priority = 0) {
  std::vector<std::string> ids;
  for (int i = 1; i <= n; ++i)
    ids.push_back(api.push(ml_job(queue, {{"ext_ml_gpu_count", 1}, {"ext_ml_gpu_memory_gb", i}, {"priority", priority}})));
  return ids;
}

void put_config(Api& api, const std::string& queue, const json& body) {
  auto r = api.call("PUT", "/ojs/v1/admin/queues/" + queue + "/config", body);
  ASSERT_EQ(r.status, 200) << r.body.dump();
}

}  // namespace

class ClassWalk : public ::testing::TestWithParam<const char*> {
 protected:
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--fetch-walk-min-classes", GetParam(), "--locality-delay-ms", "0"}};
  Api api{broker.url()};
  // A worker's first FETCH from a queue judges every class (its diagnosis records);
  // the FETCHes after it, within DiagnosisLog's refresh period, walk.
  void warm_up(const std::string& queue) { EXPECT_EQ(api.fetch({queue}, "dgx-1", 1, dgx()).size(), 0u); }
};

// The newest class is the only one whose affinity the worker meets: it wins its band
// although forty older heads come before it in the index.
TEST_P(ClassWalk, APreferredClassBehindOlderHeadsWins) {
  warm_up("walk-pref");
  push_plain_classes(api, "walk-pref", 40);
  const auto preferred = api.push(ml_job(
      "walk-pref", {{"ext_ml_gpu_count", 1},
                    {"ext_ml_affinity", {{"preferred", {{{"key", "gpu_interconnect"}, {"operator", "In"}, {"values", {"nvlink"}}, {"weight", 90}}}}}}}));
  const auto jobs = api.fetch({"walk-pref"}, "dgx-1", 1, dgx());
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0]["id"], preferred);
}

// Without preferences the oldest head of the best band wins; a higher priority wins
// over every older head.
TEST_P(ClassWalk, PriorityThenAgeAcrossClasses) {
  warm_up("walk-order");
  const auto plain = push_plain_classes(api, "walk-order", 40);
  const auto urgent = api.push(ml_job("walk-order", {{"ext_ml_gpu_count", 1}, {"ext_ml_gpu_memory_gb", 70}, {"priority", 50}}));
  auto jobs = api.fetch({"walk-order"}, "dgx-1", 1, dgx());
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0]["id"], urgent);
  jobs = api.fetch({"walk-order"}, "dgx-1", 1, dgx());
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0]["id"], plain.front());
}

// The best heads need more GPUs than the queue's budget leaves: the claim refuses
// them and a job that fits the budget is still handed out in the same FETCH.
TEST_P(ClassWalk, AClassTheBudgetRefusesDoesNotStopTheFetch) {
  warm_up("walk-budget");
  put_config(api, "walk-budget", {{"budgets", {{"max_total_gpus", 2}}}});
  for (int i = 1; i <= 40; ++i)
    api.push(ml_job("walk-budget", {{"ext_ml_gpu_count", 4}, {"ext_ml_gpu_memory_gb", i}}));
  const auto small = api.push(ml_job("walk-budget", {{"ext_ml_gpu_count", 1}, {"ext_ml_gpu_memory_gb", 79}}));
  const auto jobs = api.fetch({"walk-budget"}, "dgx-1", 1, dgx());
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0]["id"], small);
}

// Classes the worker's hardware refuses are passed over, and say why in the diagnosis.
TEST_P(ClassWalk, RefusedClassesArePassedOverAndDiagnosed) {
  warm_up("walk-refuse");
  std::vector<std::string> too_big;
  for (int i = 1; i <= 40; ++i) too_big.push_back(api.push(ml_job("walk-refuse", {{"ext_ml_gpu_count", 1}, {"ext_ml_gpu_memory_gb", 80 + i}})));
  const auto fits = api.push(ml_job("walk-refuse", {{"ext_ml_gpu_count", 1}, {"ext_ml_gpu_memory_gb", 10}}));
  const auto jobs = api.fetch({"walk-refuse"}, "dgx-1", 1, dgx());
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0]["id"], fits);
  const auto info = api.get("/ojs/v1/jobs/" + too_big.front()).body["job"];
  ASSERT_TRUE(info.contains("diagnosis")) << info.dump();
  EXPECT_EQ(info["diagnosis"]["by_predicate"]["gpu_memory"]["count"], 1) << info["diagnosis"].dump();
}

// Under `policy: fair` the heads' order is not the claim's: team-a's thirty classes
// come first in the index, yet team-b, with the lower share, gets every other job.
TEST_P(ClassWalk, FairQueuesFollowTheirShares) {
  warm_up("walk-fair");
  put_config(api, "walk-fair", {{"policy", "fair"}, {"tenant_fairness", {{"weights", {{"team-a", 1}, {"team-b", 1}}}}}});
  for (int i = 1; i <= 40; ++i) {
    auto job = ml_job("walk-fair", {{"ext_ml_gpu_count", 1}, {"ext_ml_gpu_memory_gb", i}});
    job["meta"] = {{"tenant_id", i <= 30 ? "team-a" : "team-b"}};
    api.push(job);
  }
  std::map<std::string, int> by_tenant;
  for (int i = 0; i < 8; ++i) {
    const auto jobs = api.fetch({"walk-fair"}, "dgx-1", 1, dgx());
    ASSERT_EQ(jobs.size(), 1u);
    by_tenant[jobs[0]["meta"].value("tenant_id", std::string())]++;
  }
  // Equal weights split the eight jobs evenly up to one job: a tenant's share counts
  // the GPU-time its running jobs have accrued (fair_shares_from), so which of two
  // tenants with equal holdings goes next depends on when their jobs started (a FETCH
  // slowed by a loaded machine made it 5:3 once). Following the heads would give team-a all 8.
  EXPECT_NEAR(by_tenant["team-a"], 4, 1);
  EXPECT_NEAR(by_tenant["team-b"], 4, 1);
}

INSTANTIATE_TEST_SUITE_P(WalkedAndJudgedWhole, ClassWalk, ::testing::Values("0", "100000"),
                         [](const auto& info) { return std::string(info.param) == "0" ? "Walked" : "JudgedWhole"; });
