// parse_requirements: the three encodings, validation rules, spec inferences.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ojs/core/error.hpp"
#include "ojs/ml/requirements.hpp"

using nlohmann::json;
using namespace ojs::ml;

namespace {

// The field named in the 400 error, or "" when parsing succeeded.
std::string rejected_field(const json& job) {
  try {
    parse_requirements(job);
  } catch (const ojs::OjsError& e) {
    EXPECT_EQ(e.code(), ojs::ErrorCode::invalid_request);
    return e.details().at("field").get<std::string>();
  }
  return "";
}

const json kTopLevel = {
    {"type", "ml.train"},
    {"ext_ml_gpu_type", "nvidia-h100"},
    {"ext_ml_gpu_count", 8},
    {"ext_ml_gpu_memory_gb", 80},
    {"ext_ml_gpu_compute_capability", "9.0"},
    {"ext_ml_gpu_interconnect", "nvlink"},
    {"ext_ml_memory_gb", 1024},
    {"ext_ml_cpu_cores", 96},
    {"ext_ml_model_id", "llama-3.1-70b"},
    {"ext_ml_model_version", "v2.1"},
    {"ext_ml_model_format", "safetensors"},
    {"ext_ml_runtime", "pytorch"},
    {"ext_ml_precision", "bf16"},
    {"ext_ml_priority_class", "spot"},
    {"ext_ml_checkpoint_enabled", true},
    {"ext_ml_checkpoint_storage_uri", "s3://ckpt/run/"},
    {"ext_ml_node_selector", {{"region", "us-east-1"}}},
    {"ext_ml_affinity",
     {{"required", {{{"key", "zone"}, {"operator", "In"}, {"values", {"a", "b"}}}}},
      {"preferred", {{{"key", "tier"}, {"operator", "Exists"}, {"weight", 80}}}}}},
};

}  // namespace

TEST(MlRequirements, PlainJobHasNoConstraints) {
  auto r = parse_requirements(json{{"type", "email.send"}, {"args", json::array()}});
  EXPECT_FALSE(r.has_hard_constraints());
  EXPECT_EQ(r.hard.gpu.count, 0);
  EXPECT_TRUE(r.soft.empty());
  EXPECT_EQ(r.scheduling.grace_period_s, 30);
  EXPECT_EQ(r.scheduling.checkpoint.interval_s, 300);
  EXPECT_EQ(r.scheduling.checkpoint.max_count, 3);
}

TEST(MlRequirements, TopLevelParsesEveryGroup) {
  auto r = parse_requirements(kTopLevel);
  EXPECT_EQ(r.hard.accelerator, Accelerator::gpu);  // inferred
  EXPECT_EQ(r.hard.gpu.count, 8);
  EXPECT_EQ(r.hard.gpu.type, "nvidia-h100");
  EXPECT_EQ(*r.hard.gpu.memory_gb, 80);
  EXPECT_EQ(r.hard.gpu.min_compute_capability, (ComputeCapability{9, 0}));
  EXPECT_EQ(r.hard.gpu.interconnect, Interconnect::nvlink);
  EXPECT_EQ(r.hard.pinned_model_id, "llama-3.1-70b");
  EXPECT_EQ(r.hard.pinned_model_version, "v2.1");
  EXPECT_TRUE(r.soft.locality_model_id.empty());
  EXPECT_EQ(r.hard.required_affinity.size(), 1u);
  ASSERT_EQ(r.soft.preferred_affinity.size(), 1u);
  EXPECT_EQ(r.soft.preferred_affinity[0].weight, 80);
  EXPECT_EQ(r.scheduling.priority_class, PriorityClass::spot);
  EXPECT_TRUE(r.scheduling.preemptible);  // spot default
  EXPECT_TRUE(r.scheduling.checkpoint.enabled);
  EXPECT_TRUE(r.has_hard_constraints());
}

TEST(MlRequirements, ThreeEncodingsGiveTheSameRequirements) {
  json meta_job = {
      {"type", "ml.train"},
      {"meta",
       {{"resources",
         {{"gpu",
           {{"type", "nvidia-h100"}, {"count", 8}, {"memory_gb", 80}, {"compute_capability", "9.0"}, {"interconnect", "nvlink"}}},
          {"memory_gb", 1024},
          {"cpu_cores", 96}}},
        {"model", {{"id", "llama-3.1-70b"}, {"version", "v2.1"}, {"format", "safetensors"}}},
        {"compute", {{"runtime", "pytorch"}, {"precision", "bf16"}}},
        {"preemption", {{"priority_class", "spot"}}},
        {"checkpoint", {{"enabled", true}, {"storage_uri", "s3://ckpt/run/"}}},
        {"node_selector", {{"region", "us-east-1"}}},
        {"affinity", kTopLevel["ext_ml_affinity"]}}}};
  json synonym_job = kTopLevel;
  synonym_job["ext_ml_node_affinity"] = synonym_job["ext_ml_affinity"];
  synonym_job.erase("ext_ml_affinity");
  auto a = parse_requirements(kTopLevel);
  EXPECT_EQ(a, parse_requirements(meta_job));
  EXPECT_EQ(a, parse_requirements(synonym_job));
}

TEST(MlRequirements, TopLevelWinsOverMeta) {
  json job = {{"ext_ml_gpu_count", 2}, {"meta", {{"resources", {{"gpu", {{"count", 4}}}}}}}};
  EXPECT_EQ(parse_requirements(job).hard.gpu.count, 2);
  EXPECT_EQ(parse_requirements(json{{"meta", {{"resources", {{"gpu", 3}}}}}}).hard.gpu.count, 3);
}

TEST(MlRequirements, GpuCountDefaultsToOneWhenAnyGpuFieldIsSet) {
  auto r = parse_requirements(json{{"ext_ml_gpu_memory_gb", 24}});
  EXPECT_EQ(r.hard.gpu.count, 1);
  EXPECT_EQ(r.hard.accelerator, Accelerator::gpu);
  EXPECT_EQ(parse_requirements(json{{"ext_ml_accelerator", "gpu"}}).hard.gpu.count, 1);
}

TEST(MlRequirements, InterconnectIgnoredForOneGpu) {
  auto r = parse_requirements(json{{"ext_ml_gpu_count", 1}, {"ext_ml_gpu_interconnect", "nvlink"}});
  EXPECT_EQ(r.hard.gpu.interconnect, Interconnect::any);
}

TEST(MlRequirements, PrecisionImpliesComputeCapability) {
  auto cc = [](json job) { return parse_requirements(job).hard.gpu.min_compute_capability; };
  EXPECT_EQ(cc({{"ext_ml_gpu_count", 1}, {"ext_ml_precision", "bf16"}}), (ComputeCapability{8, 0}));
  EXPECT_EQ(cc({{"ext_ml_gpu_count", 1}, {"ext_ml_precision", "fp8"}}), (ComputeCapability{8, 9}));
  EXPECT_EQ(cc({{"ext_ml_gpu_count", 1}, {"ext_ml_precision", "int4"}}), (ComputeCapability{7, 5}));
  EXPECT_EQ(cc({{"ext_ml_gpu_count", 1}, {"ext_ml_precision", "fp32"}}), (ComputeCapability{7, 0}));
  // max(explicit, implied): explicit 9.0 beats bf16's 8.0, implied 8.9 beats explicit 7.5.
  EXPECT_EQ(cc({{"ext_ml_gpu_compute_capability", "9.0"}, {"ext_ml_precision", "bf16"}}), (ComputeCapability{9, 0}));
  EXPECT_EQ(cc({{"ext_ml_gpu_compute_capability", "7.5"}, {"ext_ml_precision", "fp8"}}), (ComputeCapability{8, 9}));
  // A CPU job's precision says nothing about GPUs.
  EXPECT_FALSE(cc({{"ext_ml_precision", "bf16"}}).has_value());
}

TEST(MlRequirements, ComputeCapabilityComparesPerPart) {
  EXPECT_GT(*parse_compute_capability("10.0"), *parse_compute_capability("9.0"));
  EXPECT_GT(*parse_compute_capability("8.10"), *parse_compute_capability("8.6"));
  EXPECT_EQ(*parse_compute_capability("8.0"), (ComputeCapability{8, 0}));
  EXPECT_FALSE(parse_compute_capability("8"));
  EXPECT_FALSE(parse_compute_capability("8.x"));
  EXPECT_FALSE(parse_compute_capability("v8.0"));
}

TEST(MlRequirements, PreemptibleDefaultsFromPriorityClass) {
  auto pre = [](const char* cls) { return parse_requirements(json{{"ext_ml_priority_class", cls}}).scheduling.preemptible; };
  EXPECT_TRUE(pre("spot"));
  EXPECT_FALSE(pre("on-demand"));
  EXPECT_FALSE(pre("reserved"));
  EXPECT_FALSE(parse_requirements(json{{"ext_ml_priority_class", "spot"}, {"ext_ml_preemptible", false}}).scheduling.preemptible);
}

TEST(MlRequirements, ModelIdWithoutVersionIsSoftLocality) {
  auto r = parse_requirements(json{{"ext_ml_model_id", "resnet50"}});
  EXPECT_EQ(r.soft.locality_model_id, "resnet50");
  EXPECT_TRUE(r.hard.pinned_model_id.empty());
  EXPECT_FALSE(r.has_hard_constraints());
}

TEST(MlRequirements, TpuTopologyGivesChipCount) {
  auto r = parse_requirements(json{{"ext_ml_tpu_type", "v5e"}, {"ext_ml_tpu_topology", "4x4"}});
  EXPECT_EQ(r.hard.accelerator, Accelerator::tpu);
  EXPECT_EQ(r.hard.tpu.chip_count, 16);
  EXPECT_EQ(rejected_field({{"ext_ml_tpu_topology", "2x4"}, {"ext_ml_tpu_chip_count", 16}}), "ext_ml_tpu_chip_count");
}

TEST(MlRequirements, ConformanceCasesParse) {
  // EXT-ML-005 sends a bare GPU model name; EXT-ML-002 uses ext_ml_node_affinity.
  EXPECT_EQ(parse_requirements(json{{"ext_ml_gpu_type", "a100"}, {"ext_ml_gpu_count", 1}}).hard.gpu.type, "a100");
  EXPECT_EQ(rejected_field({{"ext_ml_max_tokens", 4096}, {"ext_ml_max_batch_size", 32}, {"ext_ml_timeout_seconds", 300}}), "");
}

struct BadCase {
  json job;
  std::string field;
};

class MlRequirementsRejects : public ::testing::TestWithParam<BadCase> {};

TEST_P(MlRequirementsRejects, NamesTheField) { EXPECT_EQ(rejected_field(GetParam().job), GetParam().field); }

INSTANTIATE_TEST_SUITE_P(
    Rules, MlRequirementsRejects,
    ::testing::Values(
        BadCase{{{"ext_ml_gpu_count", "2"}}, "ext_ml_gpu_count"},                         // type
        BadCase{{{"ext_ml_gpu_count", 1.5}}, "ext_ml_gpu_count"},                         // integer
        BadCase{{{"ext_ml_gpu_count", 129}}, "ext_ml_gpu_count"},                         // max
        BadCase{{{"ext_ml_gpu_count", 0}}, "ext_ml_gpu_count"},                           // < 1
        BadCase{{{"ext_ml_gpu_count", 0}, {"ext_ml_gpu_type", "nvidia-a100"}}, "ext_ml_gpu_count"},
        BadCase{{{"ext_ml_gpu_memory_gb", 0.5}}, "ext_ml_gpu_memory_gb"},                 // min 1
        BadCase{{{"ext_ml_gpu_compute_capability", "9"}}, "ext_ml_gpu_compute_capability"},
        BadCase{{{"ext_ml_gpu_compute_capability", 9.0}}, "ext_ml_gpu_compute_capability"},
        BadCase{{{"ext_ml_gpu_interconnect", "infiniband"}}, "ext_ml_gpu_interconnect"},  // enum
        BadCase{{{"ext_ml_accelerator", "quantum"}}, "ext_ml_accelerator"},
        BadCase{{{"ext_ml_accelerator", "cpu"}, {"ext_ml_gpu_count", 2}}, "ext_ml_accelerator"},
        BadCase{{{"ext_ml_tpu_type", "v3"}}, "ext_ml_tpu_type"},
        BadCase{{{"ext_ml_tpu_topology", "2by4"}}, "ext_ml_tpu_topology"},
        BadCase{{{"ext_ml_tpu_topology", "2x4x4x4"}}, "ext_ml_tpu_topology"},
        BadCase{{{"ext_ml_memory_gb", 0.25}}, "ext_ml_memory_gb"},
        BadCase{{{"ext_ml_cpu_cores", 2000}}, "ext_ml_cpu_cores"},
        BadCase{{{"ext_ml_storage_gb", -1}}, "ext_ml_storage_gb"},
        BadCase{{{"ext_ml_shm_size_gb", 2048}}, "ext_ml_shm_size_gb"},
        BadCase{{{"ext_ml_model_id", ""}}, "ext_ml_model_id"},
        BadCase{{{"ext_ml_model_checksum", "e3b0c442"}}, "ext_ml_model_checksum"},
        BadCase{{{"ext_ml_model_checksum", "sha256:XYZ"}}, "ext_ml_model_checksum"},
        BadCase{{{"ext_ml_model_format", "pickle"}}, "ext_ml_model_format"},
        BadCase{{{"ext_ml_model_provider", "acme"}}, "ext_ml_model_provider"},
        BadCase{{{"ext_ml_runtime", "jax"}}, "ext_ml_runtime"},
        BadCase{{{"ext_ml_precision", "fp64"}}, "ext_ml_precision"},
        BadCase{{{"ext_ml_timeout_seconds", 604801}}, "ext_ml_timeout_seconds"},
        BadCase{{{"ext_ml_estimated_duration_seconds", 0}}, "ext_ml_estimated_duration_seconds"},
        BadCase{{{"ext_ml_estimated_duration_seconds", "60"}}, "ext_ml_estimated_duration_seconds"},
        BadCase{{{"ext_ml_estimated_duration_seconds", 31536001}}, "ext_ml_estimated_duration_seconds"},
        BadCase{{{"ext_ml_priority_class", "gold"}}, "ext_ml_priority_class"},
        BadCase{{{"ext_ml_preemptible", "yes"}}, "ext_ml_preemptible"},
        BadCase{{{"ext_ml_preemption_grace_period_s", -1}}, "ext_ml_preemption_grace_period_s"},
        BadCase{{{"ext_ml_checkpoint_interval_s", 5}}, "ext_ml_checkpoint_interval_s"},
        BadCase{{{"ext_ml_checkpoint_max_count", 0}}, "ext_ml_checkpoint_max_count"},
        BadCase{{{"ext_ml_checkpoint_storage_uri", "http://x/ckpt/"}}, "ext_ml_checkpoint_storage_uri"},
        BadCase{{{"ext_ml_checkpoint_storage_uri", "s3://bucket/ckpt"}}, "ext_ml_checkpoint_storage_uri"},
        BadCase{{{"ext_ml_node_selector", {{"region", 1}}}}, "ext_ml_node_selector.region"},
        BadCase{{{"ext_ml_affinity", {{"required", {{{"key", "z"}, {"operator", "Near"}, {"values", {"a"}}}}}}}},
                "ext_ml_affinity.required[0].operator"},
        BadCase{{{"ext_ml_affinity", {{"required", {{{"key", "z"}, {"operator", "In"}}}}}}}, "ext_ml_affinity.required[0].values"},
        BadCase{{{"ext_ml_affinity", {{"required", {{{"key", "z"}, {"operator", "Exists"}, {"values", {"a"}}}}}}}},
                "ext_ml_affinity.required[0].values"},
        BadCase{{{"ext_ml_affinity", {{"required", {{{"key", "z"}, {"operator", "Gt"}, {"values", {"1", "2"}}}}}}}},
                "ext_ml_affinity.required[0].values"},
        BadCase{{{"ext_ml_affinity", {{"required", {{{"key", "z"}, {"operator", "Lte"}, {"values", {"many"}}}}}}}},
                "ext_ml_affinity.required[0].values"},
        BadCase{{{"ext_ml_affinity", {{"preferred", {{{"key", "z"}, {"operator", "Exists"}, {"weight", 101}}}}}}},
                "ext_ml_affinity.preferred[0].weight"},
        BadCase{{{"ext_ml_affinity", {{"required", {{{"operator", "Exists"}}}}}}}, "ext_ml_affinity.required[0].key"},
        BadCase{{{"ext_ml_affinity", {{"sometimes", json::array()}}}}, "ext_ml_affinity.sometimes"},
        BadCase{{{"ext_ml_node_affinity", {{"required", {{{"key", "z"}, {"operator", "In"}}}}}}},
                "ext_ml_node_affinity.required[0].values"},
        BadCase{{{"ext_ml_anti_affinity", {{"preferred", json::array()}}}}, "ext_ml_anti_affinity.preferred"},
        BadCase{{{"meta", {{"resources", {{"gpu", {{"count", -1}}}}}}}}, "meta.resources.gpu.count"},
        BadCase{{{"meta", {{"resources", {{"gpu", {{"memory_gb", 2000}}}}}}}}, "meta.resources.gpu.memory_gb"},
        BadCase{{{"meta", {{"preemption", {{"grace_period_s", -5}}}}}}, "meta.preemption.grace_period_s"},
        BadCase{{{"meta", {{"model", {{"checksum", "md5"}}}}}}, "meta.model.checksum"},
        BadCase{{{"meta", {{"resources", "lots"}}}}, "meta.resources"}));

// SDK ML helpers send meta.model.name (the spec RFC's name) and
// meta.checkpoint.max_checkpoints; both must reach the same attributes.
TEST(MlRequirements, SdkAliasesModelNameAndMaxCheckpoints) {
  const auto r = parse_requirements(json{{"meta", {{"model", {{"name", "llama-3.1-8b"}, {"version", "2"}}},
                                                   {"checkpoint", {{"enabled", true}, {"max_checkpoints", 7}}}}}});
  EXPECT_EQ(r.hard.pinned_model_id, "llama-3.1-8b");
  EXPECT_EQ(r.scheduling.checkpoint.max_count, 7);
  // The canonical spelling wins when both are sent.
  const auto both = parse_requirements(json{{"meta", {{"model", {{"name", "a"}, {"id", "b"}, {"version", "1"}}},
                                                      {"checkpoint", {{"max_checkpoints", 7}, {"max_count", 2}}}}}});
  EXPECT_EQ(both.hard.pinned_model_id, "b");
  EXPECT_EQ(both.scheduling.checkpoint.max_count, 2);
}

// The proposed ext_ml_estimated_duration_seconds (sjf, backfill), top level or meta.compute.
TEST(Requirements, EstimatedDurationIsReadFromBothEncodings) {
  EXPECT_EQ(parse_requirements({{"ext_ml_estimated_duration_seconds", 90}}).scheduling.estimated_duration_seconds, 90);
  EXPECT_EQ(parse_requirements({{"meta", {{"compute", {{"estimated_duration_seconds", 7}}}}}}).scheduling.estimated_duration_seconds, 7);
  EXPECT_FALSE(parse_requirements(json::object()).scheduling.estimated_duration_seconds);
  // Scheduling, not matching: it does not split requirement classes.
  EXPECT_EQ(parse_requirements({{"ext_ml_estimated_duration_seconds", 90}}).hard,
            parse_requirements(json::object()).hard);
}
