// Requirement classes: canonical form, ids, round trip.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ojs/ml/requirement_class.hpp"

using nlohmann::json;
using namespace ojs::ml;

namespace {
std::string id_of(const json& job) { return class_id(parse_requirements(job)); }
}  // namespace

TEST(MlRequirementClass, NoConstraintsIsDefault) {
  EXPECT_EQ(id_of({{"type", "email"}}), "default");
  EXPECT_EQ(id_of({{"ext_ml_priority_class", "spot"}, {"ext_ml_timeout_seconds", 60}}), "default");  // scheduling only
  EXPECT_EQ(id_of({{"ext_ml_accelerator", "cpu"}}), "default");  // cpu constrains nothing
}

TEST(MlRequirementClass, IdenticalHardConstraintsShareAClass) {
  json a = {{"type", "ml.train"}, {"ext_ml_gpu_count", 2}, {"ext_ml_gpu_memory_gb", 80.0}, {"ext_ml_gpu_type", "NVIDIA-A100"},
            {"ext_ml_priority_class", "spot"}, {"args", {1}},
            {"ext_ml_affinity", {{"required", {{{"key", "z"}, {"operator", "In"}, {"values", {"b", "a"}}},
                                               {{"key", "y"}, {"operator", "Exists"}}}}}}};
  json b = {{"type", "other"}, {"meta", {{"resources", {{"gpu", {{"count", 2}, {"memory_gb", 80}, {"type", "nvidia-a100"}}}}}}},
            {"ext_ml_priority_class", "reserved"},
            {"ext_ml_affinity", {{"required", {{{"key", "y"}, {"operator", "Exists"}},
                                               {{"key", "z"}, {"operator", "In"}, {"values", {"a", "b", "a"}}}}}}}};
  EXPECT_EQ(id_of(a), id_of(b));
  EXPECT_EQ(id_of(a).size(), 16u);
  EXPECT_EQ(requirement_class(parse_requirements(a)).canonical, requirement_class(parse_requirements(b)).canonical);
}

TEST(MlRequirementClass, DifferentConstraintsDifferentClasses) {
  json base = {{"ext_ml_gpu_count", 2}, {"ext_ml_gpu_memory_gb", 80}};
  std::set<std::string> ids{id_of(base)};
  for (auto [k, v] : std::vector<std::pair<std::string, json>>{{"ext_ml_gpu_count", 4},
                                                               {"ext_ml_gpu_memory_gb", 40},
                                                               {"ext_ml_gpu_interconnect", "nvlink"},
                                                               {"ext_ml_node_selector", {{"region", "x"}}},
                                                               {"ext_ml_runtime", "vllm"},
                                                               {"ext_ml_model_id", "llama"}}) {
    json j = base;
    j[k] = v;
    EXPECT_TRUE(ids.insert(id_of(j)).second) << k;
  }
}

TEST(MlRequirementClass, PrecisionFoldsIntoComputeCapability) {
  EXPECT_EQ(id_of({{"ext_ml_gpu_count", 1}, {"ext_ml_precision", "bf16"}}),
            id_of({{"ext_ml_gpu_count", 1}, {"ext_ml_gpu_compute_capability", "8.0"}}));
}

TEST(MlRequirementClass, CanonicalFormIsSortedAndNormalised) {
  auto c = class_json(parse_requirements(json{{"ext_ml_gpu_memory_gb", 80.0}, {"ext_ml_gpu_type", "NVIDIA-H100"}}));
  EXPECT_EQ(c.dump(), R"({"ext_ml_accelerator":"gpu","ext_ml_gpu_count":1,"ext_ml_gpu_memory_gb":80,"ext_ml_gpu_type":"nvidia-h100"})");
}

TEST(MlRequirementClass, RoundTripsThroughCanonicalJson) {
  json job = {{"ext_ml_gpu_count", 4}, {"ext_ml_gpu_interconnect", "nvlink"}, {"ext_ml_precision", "fp8"},
              {"ext_ml_model_id", "llama"}, {"ext_ml_memory_gb", 512.5}, {"ext_ml_tpu_type", nullptr}};
  job.erase("ext_ml_tpu_type");
  job["ext_ml_affinity"] = {{"preferred", {{{"key", "zone"}, {"operator", "In"}, {"values", {"a"}}, {"weight", 70}}}}};
  job["ext_ml_anti_affinity"] = {{"required", {{{"key", "type"}, {"operator", "In"}, {"values", {"ml.train"}}}}}};
  auto r = parse_requirements(job);
  auto back = requirements_from_class_json(class_json(r));
  EXPECT_EQ(back.hard, r.hard);
  EXPECT_EQ(back.soft, r.soft);
  EXPECT_EQ(class_id(back), class_id(r));
  auto tpu = parse_requirements(json{{"ext_ml_tpu_type", "v5e"}, {"ext_ml_tpu_topology", "2x4"}});
  EXPECT_EQ(requirements_from_class_json(class_json(tpu)).hard, tpu.hard);
}
