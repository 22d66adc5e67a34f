// Soft scores, delay scheduling and diagnosis messages.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "ojs/ml/diagnosis.hpp"
#include "ojs/ml/scoring.hpp"

using nlohmann::json;
using namespace ojs::ml;

TEST(MlScoring, AffinityLocalityAndPacking) {
  auto req = parse_requirements(json{
      {"ext_ml_gpu_count", 2},
      {"ext_ml_model_id", "llama"},
      {"ext_ml_affinity",
       {{"preferred", {{{"key", "zone"}, {"operator", "In"}, {"values", {"a"}}, {"weight", 80}},
                       {{"key", "ssd"}, {"operator", "Exists"}, {"weight", 30}},
                       {{"key", "zone"}, {"operator", "In"}, {"values", {"b"}}, {"weight", 5}}}}}}});
  auto warm = parse_capabilities(json{{"gpu", {{"count", 2}}}, {"labels", {{"zone", "a"}, {"ssd", "yes"}}},
                                      {"models_loaded", {{{"model_id", "llama"}, {"model_version", "v1"}}}}});
  auto cold = parse_capabilities(json{{"gpu", {{"count", 8}}}, {"labels", {{"zone", "b"}}}});
  auto w = score(req, warm);
  EXPECT_EQ(w.affinity, 110);
  EXPECT_EQ(w.locality, 100);
  EXPECT_EQ(w.packing, 10);  // 2 of 2 free GPUs
  EXPECT_EQ(w.total, 220);
  EXPECT_NE(w.explanation.find("locality +100 (llama loaded)"), std::string::npos) << w.explanation;
  auto c = score(req, cold);
  EXPECT_EQ(c.affinity, 5);
  EXPECT_EQ(c.locality, 0);
  EXPECT_DOUBLE_EQ(c.packing, 2.5);  // 2 of 8
  WorkerLoad load;
  load.active.push_back({"j", 6, {}});
  EXPECT_EQ(score(req, cold, &load).packing, 10);  // now exactly fills the 2 free GPUs
}

TEST(MlScoring, CpuJobPrefersGpuLessWorker) {
  auto req = parse_requirements(json{{"ext_ml_cpu_cores", 2}});
  EXPECT_GT(score(req, parse_capabilities(json{{"cpu_cores", 8}})).total,
            score(req, parse_capabilities(json{{"cpu_cores", 8}, {"gpu", {{"count", 8}}}})).total);
}

TEST(MlScoring, LocalityHoldExpires) {
  auto req = parse_requirements(json{{"ext_ml_model_id", "llama"}});
  auto cold = parse_capabilities(json{{"cpu_cores", 4}});
  auto warm = parse_capabilities(json{{"models_loaded", {"llama"}}});
  ScoringOptions opt;
  opt.locality_delay_ms = 3000;
  EXPECT_TRUE(locality_hold(req, &cold, 0, opt));
  EXPECT_TRUE(locality_hold(req, &cold, 2999, opt));
  EXPECT_FALSE(locality_hold(req, &cold, 3000, opt));  // then it goes anywhere
  EXPECT_TRUE(locality_hold(req, nullptr, 10, opt));
  EXPECT_FALSE(locality_hold(req, &warm, 0, opt));
  EXPECT_FALSE(locality_hold(parse_requirements(json{{"type", "x"}}), &cold, 0, opt));
}

TEST(MlDiagnosis, SummarisesRefusalsByPredicate) {
  auto req = parse_requirements(json{{"ext_ml_gpu_memory_gb", 80}, {"ext_ml_node_selector", {{"region", "us-east-1"}}}});
  auto small = parse_capabilities(json{{"gpu", {{"count", 1}, {"memory_gb", 40}}}, {"labels", {{"region", "us-east-1"}}}});
  auto far = parse_capabilities(json{{"gpu", {{"count", 1}, {"memory_gb", 80}}}, {"labels", {{"region", "eu-west-1"}}}});
  auto good = parse_capabilities(json{{"gpu", {{"count", 1}, {"memory_gb", 80}}}, {"labels", {{"region", "us-east-1"}}}});
  std::vector<WorkerJudgement> recs;
  for (int i = 0; i < 8; ++i) recs.push_back({"small-" + std::to_string(i), judge_static(req, &small)});
  for (int i = 0; i < 4; ++i) recs.push_back({"far-" + std::to_string(i), judge_static(req, &far)});
  // Every refusal is static: no worker seen could ever take it.
  EXPECT_EQ(diagnosis_message(recs), "0/12 workers: 8 have < 80 GB per GPU, 4 lack label region=us-east-1 [unresolvable]");
  recs.push_back({"good", judge_static(req, &good)});
  auto d = diagnose(recs);
  EXPECT_EQ(d["workers_seen"], 13);
  EXPECT_EQ(d["eligible"], 1);
  EXPECT_EQ(d["by_predicate"]["gpu_memory"]["count"], 8);
  EXPECT_EQ(d["by_predicate"]["gpu_memory"]["sample_reason"], "has 40 GB per GPU, job needs >= 80 GB");
  EXPECT_EQ(d["by_predicate"]["node_selector"]["sample_worker"], "far-0");
  EXPECT_EQ(d["message"], "1/13 workers: 8 have < 80 GB per GPU, 4 lack label region=us-east-1");
  EXPECT_EQ(d["code"], "ok");
  EXPECT_EQ(d["by_code"]["unresolvable"], 12);
  EXPECT_EQ(d["by_predicate"]["gpu_memory"]["code"], "unresolvable");
  EXPECT_EQ(diagnosis_message({}), "0/0 workers: no worker has fetched");
  EXPECT_EQ(diagnosis_message({{"good", judge_static(req, &good)}}), "1/1 workers eligible");
}

// Busy now and never: a 1-GPU worker running a job is `wait`; a worker whose only
// devices are MIG slices can never take a 2-GPU job (`unresolvable`), and the fleet
// of such workers reads unresolvable, not "have < 2 free GPUs".
TEST(MlDiagnosis, TellsBusyNowFromNeverFits) {
  const auto mig = parse_capabilities(json{
      {"gpu", {{"type", "nvidia-h100"}}},
      {"devices", {{{"index", 1}, {"memory_gb", 40}, {"mig_profile", "3g.40gb"}, {"parent_index", 0}},
                   {{"index", 2}, {"memory_gb", 40}, {"mig_profile", "3g.40gb"}, {"parent_index", 0}}}}});
  WorkerLoad idle;
  const auto two = judge(parse_requirements(json{{"ext_ml_gpu_count", 2}}), &mig, idle);
  ASSERT_EQ(two.refusals.size(), 1u);
  EXPECT_EQ(two.refusals[0].predicate, "free_gpus");
  EXPECT_EQ(two.code(), VerdictCode::unresolvable);
  const auto d = diagnose({{"mig-a", two}, {"mig-b", two}});
  EXPECT_EQ(d["code"], "unresolvable");
  EXPECT_EQ(d["message"].get<std::string>().find("have < 2 free GPUs"), std::string::npos) << d["message"];

  const auto one_gpu = parse_capabilities(json{{"gpu", {{"count", 1}}}});
  WorkerLoad busy;
  busy.active.push_back({"job-1", 1, {}, {}, {}});
  const auto one = judge(parse_requirements(json{{"ext_ml_gpu_count", 1}}), &one_gpu, busy);
  ASSERT_FALSE(one.eligible());
  EXPECT_EQ(one.code(), VerdictCode::wait);
  EXPECT_EQ(diagnose({{"busy", one}, {"mig", two}})["code"], "wait");  // the busy worker will free up
  EXPECT_EQ(refusal_from_json(to_json(one.refusals[0])).code, VerdictCode::wait);
}

// Explanations and refusals print numbers as printf's "%g" did (integers in full):
// format_number writes them with std::to_chars, and must write the same text.
TEST(MlFormatNumber, WritesWhatPrintfGWrites) {
  for (double v : {0.0, -0.0, 1.0, 2.5, 10.0 / 3, 1e-7, 123456.7, 1234567.8, 1e15, 2.5e20, -0.125, 80.0 * 2 / 8, 5e-324,
                   1.7976931348623157e308}) {
    char expected[64];
    if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15)
      std::snprintf(expected, sizeof expected, "%lld", static_cast<long long>(v));
    else
      std::snprintf(expected, sizeof expected, "%g", v);
    EXPECT_EQ(format_number(v), expected) << v;
  }
}

// The scheduler asks for the numbers only: the same numbers, no text built.
TEST(MlScoring, WithoutExplanationTheNumbersAreTheSame) {
  auto req = parse_requirements(json{{"ext_ml_gpu_count", 2}, {"ext_ml_model_id", "llama"},
                                     {"ext_ml_affinity", {{"preferred", {{{"key", "zone"}, {"operator", "In"}, {"values", {"a"}}, {"weight", 80}}}}}}});
  auto caps = parse_capabilities(json{{"gpu", {{"count", 4}}}, {"labels", {{"zone", "a"}}},
                                      {"models_loaded", {{{"model_id", "llama"}, {"model_version", "v1"}}}}});
  ScoringOptions quiet;
  quiet.explain = false;
  const auto told = score(req, caps), silent = score(req, caps, nullptr, quiet);
  EXPECT_EQ(silent.total, told.total);
  EXPECT_EQ(silent.affinity, told.affinity);
  EXPECT_EQ(silent.locality, told.locality);
  EXPECT_EQ(silent.packing, told.packing);
  EXPECT_EQ(silent.explanation, "");
  EXPECT_NE(told.explanation.find("packing +5 (2 of 4 free GPUs)"), std::string::npos) << told.explanation;
}
