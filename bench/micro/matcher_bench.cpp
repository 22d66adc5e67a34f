// Cost of the matcher's per-FETCH and per-PUSH operations.
#include <benchmark/benchmark.h>

#include <nlohmann/json.hpp>

#include "ojs/ml/predicates.hpp"
#include "ojs/ml/requirement_class.hpp"

using nlohmann::json;
using namespace ojs::ml;

namespace {

const json& job() {
  static const json j = {
      {"type", "ml.train"}, {"queue", "gpu"}, {"args", {1}},
      {"ext_ml_gpu_type", "nvidia-h100"}, {"ext_ml_gpu_count", 4}, {"ext_ml_gpu_memory_gb", 80},
      {"ext_ml_gpu_interconnect", "nvlink"}, {"ext_ml_precision", "bf16"}, {"ext_ml_memory_gb", 512},
      {"ext_ml_runtime", "pytorch"}, {"ext_ml_model_id", "llama-3.1-70b"},
      {"ext_ml_node_selector", {{"region", "us-east-1"}}},
      {"ext_ml_affinity", {{"required", {{{"key", "gpu.nvidia.com/class"}, {"operator", "In"}, {"values", {"A100", "H100"}}}}},
                           {"preferred", {{{"key", "topology.kubernetes.io/zone"}, {"operator", "In"}, {"values", {"us-east-1a"}}, {"weight", 80}}}}}},
      {"ext_ml_anti_affinity", {{"required", {{{"key", "type"}, {"operator", "In"}, {"values", {"ml.eval"}}}}}}}};
  return j;
}

Capabilities dgx() {
  json devices = json::array();
  for (int i = 0; i < 8; ++i) {
    json peers = json::array();
    for (int k = 0; k < 8; ++k)
      if (k != i) peers.push_back(k);
    devices.push_back({{"index", i}, {"memory_gb", 80}, {"numa_node", i / 4}, {"nvlink_peers", peers}});
  }
  return parse_capabilities(json{
      {"gpu", {{"type", "nvidia-h100"}, {"count", 8}, {"memory_gb", 80}, {"compute_capability", "9.0"}, {"interconnect", "nvlink"}}},
      {"memory_gb", 2048}, {"runtimes", {"pytorch", "vllm"}},
      {"labels", {{"region", "us-east-1"}, {"gpu.nvidia.com/class", "H100"}, {"topology.kubernetes.io/zone", "us-east-1a"}}},
      {"devices", devices}});
}

WorkerLoad busy_load() {
  WorkerLoad load;
  load.active.push_back({"a", 2, {{"type", "ml.infer"}}, {}, std::nullopt});
  load.busy_devices = {0, 1};
  return load;
}

void BM_ParseRequirements(benchmark::State& st) {
  for (auto _ : st) benchmark::DoNotOptimize(parse_requirements(job()));
}
void BM_ClassId(benchmark::State& st) {
  auto req = parse_requirements(job());
  for (auto _ : st) benchmark::DoNotOptimize(class_id(req));
}
void BM_JudgeStatic(benchmark::State& st) {
  auto req = parse_requirements(job());
  auto caps = dgx();
  for (auto _ : st) benchmark::DoNotOptimize(judge_static(req, &caps));
}
void BM_FitsStatic(benchmark::State& st) {
  auto req = parse_requirements(job());
  auto caps = dgx();
  for (auto _ : st) benchmark::DoNotOptimize(fits_static(req, &caps));
}
void BM_JudgeFull(benchmark::State& st) {
  auto req = parse_requirements(job());
  auto caps = dgx();
  auto load = busy_load();
  for (auto _ : st) benchmark::DoNotOptimize(judge(req, &caps, load));
}
void BM_JudgeRefused(benchmark::State& st) {
  auto req = parse_requirements(job());
  auto caps = parse_capabilities(json{{"gpu", {{"type", "nvidia-a100"}, {"count", 4}, {"memory_gb", 40}}}});
  for (auto _ : st) benchmark::DoNotOptimize(judge(req, &caps, {}));
}
void BM_Fingerprint(benchmark::State& st) {
  auto caps = dgx();
  for (auto _ : st) benchmark::DoNotOptimize(fingerprint(caps));
}

}  // namespace

BENCHMARK(BM_ParseRequirements);
BENCHMARK(BM_ClassId);
BENCHMARK(BM_JudgeStatic);
BENCHMARK(BM_FitsStatic);
BENCHMARK(BM_JudgeFull);
BENCHMARK(BM_JudgeRefused);
BENCHMARK(BM_Fingerprint);
