// Each named predicate passing and refusing, with the numbers in its refusal.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ojs/ml/predicates.hpp"
#include "ojs/ml/worker_load.hpp"

using nlohmann::json;
using namespace ojs::ml;

namespace {

const json kWorker = {
    {"gpu", {{"type", "nvidia-a100"}, {"count", 4}, {"memory_gb", 40}, {"compute_capability", "8.0"}, {"interconnect", "pcie"}}},
    {"cpu_cores", 32},
    {"memory_gb", 256},
    {"storage_gb", 1000},
    {"shm_size_gb", 32},
    {"models_loaded", {{{"model_id", "llama"}, {"model_version", "v1"}, {"model_format", "safetensors"}}}},
    {"runtimes", {"pytorch", "vllm"}},
    {"labels", {{"region", "us-west-2"}, {"zone", "b"}, {"gen", "3"}}}};

// The refusal of `predicate` for this job on kWorker (nullopt when it passes).
std::optional<Refusal> refusal(const json& job, const std::string& predicate, const json& worker = kWorker) {
  auto req = parse_requirements(job);
  auto caps = parse_capabilities(worker);
  for (const auto& r : judge(req, &caps, WorkerLoad{}).refusals)
    if (r.predicate == predicate) return r;
  return std::nullopt;
}

json facts(const Refusal& r) { return to_json(r)["facts"]; }

}  // namespace

TEST(MlPredicates, RegistryHasStableNames) {
  std::vector<std::string> names;
  for (const auto& p : predicates()) names.emplace_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"accelerator", "gpu_type", "gpu_count", "gpu_memory", "gpu_compute_capability",
                                             "gpu_interconnect", "tpu", "host_memory", "cpu_cores", "storage", "shm",
                                             "node_selector", "required_affinity", "model_pin", "runtime", "model_format",
                                             "anti_affinity", "free_gpus", "free_cpu_cores", "free_host_memory",
                                             "free_tpu_chips"}));
}

TEST(MlPredicates, Accelerator) {
  EXPECT_FALSE(refusal({{"ext_ml_accelerator", "gpu"}}, "accelerator"));
  auto r = refusal({{"ext_ml_accelerator", "gpu"}}, "accelerator", {{"cpu_cores", 8}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->reason, "is a cpu worker, job needs gpu");
  EXPECT_FALSE(refusal({{"ext_ml_accelerator", "cpu"}}, "accelerator", {{"cpu_cores", 8}}));
}

TEST(MlPredicates, GpuType) {
  EXPECT_FALSE(refusal({{"ext_ml_gpu_type", "nvidia-a100"}}, "gpu_type"));
  EXPECT_FALSE(refusal({{"ext_ml_gpu_type", "A100"}}, "gpu_type"));  // bare model, any case
  auto r = refusal({{"ext_ml_gpu_type", "nvidia-h100"}}, "gpu_type");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->reason, "has nvidia-a100, job needs nvidia-h100");
  EXPECT_EQ(r->summary, "lack GPU type nvidia-h100");
}

TEST(MlPredicates, GpuCount) {
  EXPECT_FALSE(refusal({{"ext_ml_gpu_count", 4}}, "gpu_count"));
  auto r = refusal({{"ext_ml_gpu_count", 8}}, "gpu_count");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->reason, "has 4 GPUs, job needs >= 8 GPUs");
  EXPECT_EQ(facts(*r), (json{{"have", 4}, {"need", 8}}));
}

TEST(MlPredicates, GpuMemory) {
  EXPECT_FALSE(refusal({{"ext_ml_gpu_memory_gb", 40}}, "gpu_memory"));
  auto r = refusal({{"ext_ml_gpu_memory_gb", 80}}, "gpu_memory");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->reason, "has 40 GB per GPU, job needs >= 80 GB");
  EXPECT_EQ(r->summary, "have < 80 GB per GPU");
  EXPECT_EQ(facts(*r), (json{{"have", 40}, {"need", 80}}));
}

TEST(MlPredicates, GpuComputeCapability) {
  EXPECT_FALSE(refusal({{"ext_ml_gpu_compute_capability", "7.5"}}, "gpu_compute_capability"));
  auto r = refusal({{"ext_ml_gpu_compute_capability", "9.0"}}, "gpu_compute_capability");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->reason, "has compute capability 8.0, job needs >= 9.0");
  // fp8 implies 8.9, which an A100 (8.0) lacks; "10.0" outranks "9.0".
  EXPECT_TRUE(refusal({{"ext_ml_gpu_count", 1}, {"ext_ml_precision", "fp8"}}, "gpu_compute_capability"));
  json blackwell = {{"gpu", {{"count", 1}, {"compute_capability", "10.0"}}}};
  EXPECT_FALSE(refusal({{"ext_ml_gpu_compute_capability", "9.0"}}, "gpu_compute_capability", blackwell));
}

TEST(MlPredicates, GpuInterconnect) {
  json job = {{"ext_ml_gpu_count", 2}, {"ext_ml_gpu_interconnect", "nvlink"}};
  auto r = refusal(job, "gpu_interconnect");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->reason, "has pcie GPU interconnect, job needs nvlink");
  EXPECT_FALSE(refusal({{"ext_ml_gpu_count", 2}, {"ext_ml_gpu_interconnect", "pcie"}}, "gpu_interconnect"));
  EXPECT_FALSE(refusal({{"ext_ml_gpu_count", 1}, {"ext_ml_gpu_interconnect", "nvlink"}}, "gpu_interconnect"));
}

TEST(MlPredicates, Tpu) {
  json tpu = {{"tpu", {{"type", "v5e"}, {"topology", "4x4"}, {"chip_count", 16}}}};
  EXPECT_FALSE(refusal({{"ext_ml_tpu_type", "v5e"}, {"ext_ml_tpu_topology", "2x4"}}, "tpu", tpu));
  auto r = refusal({{"ext_ml_tpu_type", "v5p"}, {"ext_ml_tpu_topology", "4x8"}}, "tpu", tpu);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->reason, "has TPU type v5e, job needs v5p; has 16 TPU chips, job needs >= 32; has TPU slice 4x4, job needs 4x8");
}

TEST(MlPredicates, HostResources) {
  EXPECT_FALSE(refusal({{"ext_ml_memory_gb", 256}, {"ext_ml_cpu_cores", 32}, {"ext_ml_storage_gb", 1000}, {"ext_ml_shm_size_gb", 32}},
                       "host_memory"));
  EXPECT_EQ(refusal({{"ext_ml_memory_gb", 512}}, "host_memory")->reason, "has 256 GB host memory, job needs >= 512 GB");
  EXPECT_EQ(refusal({{"ext_ml_cpu_cores", 64}}, "cpu_cores")->reason, "has 32 CPU cores, job needs >= 64 cores");
  EXPECT_EQ(refusal({{"ext_ml_storage_gb", 2000}}, "storage")->reason, "has 1000 GB scratch storage, job needs >= 2000 GB");
  EXPECT_EQ(refusal({{"ext_ml_shm_size_gb", 64.5}}, "shm")->reason, "has 32 GB /dev/shm, job needs >= 64.5 GB");
  EXPECT_EQ(refusal({{"ext_ml_memory_gb", 8}}, "host_memory", {{"cpu_cores", 2}})->reason,
            "does not advertise GB host memory, job needs >= 8 GB");
}

TEST(MlPredicates, NodeSelector) {
  EXPECT_FALSE(refusal({{"ext_ml_node_selector", {{"region", "us-west-2"}}}}, "node_selector"));
  EXPECT_FALSE(refusal({{"ext_ml_node_selector", {{"gpu_type", "nvidia-a100"}}}}, "node_selector"));  // derived label
  auto r = refusal({{"ext_ml_node_selector", {{"region", "us-east-1"}, {"team", "nlp"}}}}, "node_selector");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->reason, "has label region=us-west-2, job needs region=us-east-1; lacks label team=nlp");
  EXPECT_EQ(r->summary, "lack label region=us-east-1");
}

TEST(MlPredicates, RequiredAffinityOperators) {
  auto rule = [](const char* key, const char* op, json values) {
    json r = {{"key", key}, {"operator", op}};
    if (!values.empty()) r["values"] = values;
    return json{{"ext_ml_affinity", {{"required", {r}}}}};
  };
  const char* p = "required_affinity";
  EXPECT_FALSE(refusal(rule("zone", "In", {"a", "b"}), p));
  EXPECT_EQ(refusal(rule("zone", "In", {"a"}), p)->reason, "label zone=b not in [a]");
  EXPECT_FALSE(refusal(rule("zone", "NotIn", {"a"}), p));
  EXPECT_FALSE(refusal(rule("missing", "NotIn", {"a"}), p));
  EXPECT_TRUE(refusal(rule("zone", "NotIn", {"b"}), p));
  EXPECT_FALSE(refusal(rule("zone", "Exists", json::array()), p));
  EXPECT_EQ(refusal(rule("ssd", "Exists", json::array()), p)->reason, "lacks label ssd");
  EXPECT_FALSE(refusal(rule("ssd", "DoesNotExist", json::array()), p));
  EXPECT_TRUE(refusal(rule("zone", "DoesNotExist", json::array()), p));
  EXPECT_FALSE(refusal(rule("gen", "Gt", {"2"}), p));
  EXPECT_TRUE(refusal(rule("gen", "Gt", {"3"}), p));
  EXPECT_FALSE(refusal(rule("gen", "Gte", {"3"}), p));
  EXPECT_FALSE(refusal(rule("gen", "Lt", {"10"}), p));  // numeric, not "3" > "10" as text
  EXPECT_TRUE(refusal(rule("gen", "Lte", {"2.5"}), p));
  EXPECT_EQ(refusal(rule("zone", "Gt", {"1"}), p)->reason, "label zone=b is not numeric (needs zone Gt 1)");
}

TEST(MlPredicates, ModelPinRuntimeFormat) {
  EXPECT_FALSE(refusal({{"ext_ml_model_id", "llama"}, {"ext_ml_model_version", "v1"}}, "model_pin"));
  auto r = refusal({{"ext_ml_model_id", "llama"}, {"ext_ml_model_version", "v2"}}, "model_pin");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->reason, "lacks model llama@v2 (loaded: llama@v1)");
  EXPECT_FALSE(refusal({{"ext_ml_runtime", "vllm"}}, "runtime"));
  EXPECT_EQ(refusal({{"ext_ml_runtime", "triton"}}, "runtime")->reason, "lacks runtime triton (has pytorch, vllm)");
  EXPECT_FALSE(refusal({{"ext_ml_model_format", "safetensors"}}, "model_format"));  // from models_loaded
  EXPECT_TRUE(refusal({{"ext_ml_model_format", "onnx"}}, "model_format"));
}

TEST(MlPredicates, AntiAffinityAgainstActiveJobs) {
  auto req = parse_requirements(json{{"ext_ml_anti_affinity", {{"required", {{{"key", "model_id"}, {"operator", "In"}, {"values", {"llama"}}}}}}}});
  auto caps = parse_capabilities(kWorker);
  WorkerLoad load;
  EXPECT_TRUE(judge(req, &caps, load).eligible());
  load.active.push_back(active_job_from(json{{"id", "j1"}, {"type", "ml.infer"}, {"ext_ml_model_id", "llama"}}, 1));
  auto j = judge(req, &caps, load);
  ASSERT_EQ(j.refusals.size(), 1u);
  EXPECT_EQ(j.refusals[0].predicate, "anti_affinity");
  EXPECT_EQ(j.refusals[0].reason, "runs job j1 matching anti-affinity model_id In [llama]");
  EXPECT_TRUE(judge_static(req, &caps).eligible());  // anti-affinity is dynamic
}

TEST(MlPredicates, FreeGpusWithoutDeviceList) {
  auto req = parse_requirements(json{{"ext_ml_gpu_count", 3}});
  auto caps = parse_capabilities(kWorker);
  WorkerLoad load;
  load.active.push_back({"j1", 2, {}});
  auto j = judge(req, &caps, load);
  ASSERT_EQ(j.refusals.size(), 1u);
  EXPECT_EQ(j.refusals[0].reason, "insufficient free GPUs: 2 free, job needs 3");
  EXPECT_TRUE(judge_static(req, &caps).eligible());
  EXPECT_FALSE(fits(req, &caps, load));
}

// What running jobs declared of CPU cores, host memory and TPU chips is held: two
// 64-core, 500 GB jobs never share a 64-core, 512 GB worker, nor two full-slice jobs
// a 16-chip slice; each predicate says why with the numbers.
TEST(MlPredicates, HostResourcesOfRunningJobsAreHeld) {
  const json big_host = {{"cpu_cores", 64}, {"memory_gb", 512}};
  const json job = {{"id", "a"}, {"ext_ml_cpu_cores", 64}, {"ext_ml_memory_gb", 500}};
  auto req = parse_requirements(job);
  auto caps = parse_capabilities(big_host);
  WorkerLoad load;
  EXPECT_TRUE(judge(req, &caps, load).eligible());
  load.active.push_back(active_job_from(job, 0));
  auto j = judge(req, &caps, load);
  ASSERT_EQ(j.refusals.size(), 2u) << to_json(j).dump();
  EXPECT_EQ(j.refusals[0].predicate, "free_cpu_cores");
  EXPECT_EQ(j.refusals[0].reason, "has 0 of 64 CPU cores free (64 held by running jobs), job needs 64");
  EXPECT_EQ(j.refusals[0].code, VerdictCode::wait);
  EXPECT_EQ(facts(j.refusals[0])["free"], 0);
  EXPECT_EQ(j.refusals[1].predicate, "free_host_memory");
  EXPECT_EQ(j.refusals[1].reason, "has 12 of 512 GB host memory free (500 held by running jobs), job needs 500");
  EXPECT_FALSE(fits(req, &caps, load));
  // A small job still fits beside it; a job larger than the worker is the static predicate's.
  EXPECT_TRUE(judge(parse_requirements(json{{"ext_ml_memory_gb", 12}}), &caps, load).eligible());
  auto huge = judge(parse_requirements(json{{"ext_ml_cpu_cores", 65}}), &caps, WorkerLoad{});
  ASSERT_EQ(huge.refusals.size(), 1u);
  EXPECT_EQ(huge.refusals[0].predicate, "cpu_cores");

  const json slice_job = {{"id", "t"}, {"ext_ml_tpu_type", "v5e"}, {"ext_ml_tpu_topology", "4x4"}};
  auto slice = parse_capabilities(json{{"accelerator", "tpu"}, {"tpu", {{"type", "v5e"}, {"topology", "4x4"}, {"chip_count", 16}}}});
  auto tpu_req = parse_requirements(slice_job);
  WorkerLoad tpu_load;
  EXPECT_TRUE(judge(tpu_req, &slice, tpu_load).eligible());
  tpu_load.active.push_back(active_job_from(slice_job, 0));
  EXPECT_EQ(tpu_load.tpu_chips_in_use(), 16);
  auto t = judge(tpu_req, &slice, tpu_load);
  ASSERT_EQ(t.refusals.size(), 1u);
  EXPECT_EQ(t.refusals[0].predicate, "free_tpu_chips");
  EXPECT_EQ(t.refusals[0].reason, "has 0 of 16 TPU chips free (16 held by running jobs), job needs 16");
}

TEST(MlPredicates, AllRefusalsAreReported) {
  auto req = parse_requirements(json{{"ext_ml_gpu_type", "nvidia-h100"}, {"ext_ml_gpu_count", 8}, {"ext_ml_gpu_memory_gb", 80},
                                     {"ext_ml_node_selector", {{"region", "us-east-1"}}}});
  auto caps = parse_capabilities(kWorker);
  std::vector<std::string> names;
  for (const auto& r : judge(req, &caps, {}).refusals) names.push_back(r.predicate);
  EXPECT_EQ(names, (std::vector<std::string>{"gpu_type", "gpu_count", "gpu_memory", "node_selector", "free_gpus"}));
  EXPECT_FALSE(fits(req, &caps, {}));
}

TEST(MlPredicates, WorkerWithoutCapabilities) {
  auto plain = parse_requirements(json{{"type", "email"}});
  auto soft = parse_requirements(json{{"ext_ml_model_id", "resnet50"}});
  auto gpu = parse_requirements(json{{"ext_ml_gpu_count", 1}});
  EXPECT_TRUE(judge(plain, nullptr, {}).eligible());
  EXPECT_TRUE(judge(soft, nullptr, {}).eligible());
  auto j = judge(gpu, nullptr, {});
  ASSERT_EQ(j.refusals.size(), 1u);
  EXPECT_EQ(j.refusals[0].predicate, "capabilities");
  EXPECT_FALSE(fits(gpu, nullptr, {}));
  EXPECT_TRUE(fits(plain, nullptr, {}));
}

TEST(MlPredicates, FastPathAgreesWithJudge) {
  auto caps = parse_capabilities(kWorker);
  for (json job : {json{{"ext_ml_gpu_count", 4}}, json{{"ext_ml_gpu_count", 5}}, json{{"ext_ml_runtime", "vllm"}},
                   json{{"ext_ml_runtime", "tgi"}}, json{{"ext_ml_memory_gb", 300}}}) {
    auto req = parse_requirements(job);
    EXPECT_EQ(fits(req, &caps, {}), judge(req, &caps, {}).eligible()) << job.dump();
  }
}

// Anti-affinity reads a running job's model as PUSH does (meta_aliases.hpp): meta.model.name too.
TEST(WorkerLoad, JobLabelsReadTheModelNameToo) {
  EXPECT_EQ(job_labels(json{{"type", "t"}, {"meta", {{"model", {{"name", "llama"}}}}}}).at("model_id"), "llama");
  EXPECT_EQ(job_labels(json{{"type", "t"}, {"meta", {{"model", {{"name", "a"}, {"id", "b"}}}}}}).at("model_id"), "b");
  EXPECT_EQ(job_labels(json{{"ext_ml_model_id", "top"}, {"meta", {{"model", {{"id", "b"}}}}}}).at("model_id"), "top");
}
