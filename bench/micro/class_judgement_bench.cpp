// Cost of the broker's per-FETCH class judgement: Scheduler::judge over a queue
// of K requirement classes for one worker. Warm: the static verdicts are memoised
// for this worker's capability fingerprint (the steady state: a worker re-polls
// with unchanged capabilities). Cold: every iteration is a fingerprint never seen
// (static predicates run for every class). Reported per class judged.
#include <benchmark/benchmark.h>

#include <nlohmann/json.hpp>

#include <fstream>

#include "broker/scheduling/scheduler.hpp"
#include "ojs/ml/requirement_class.hpp"

using nlohmann::json;

namespace {

// K classes as the load generator makes them (one GPU with at least c+1 GB; the
// schema caps VRAM at 640 GB, so beyond that the CPU core count varies too).
ojs::broker::ClassSet classes(int k) {
  ojs::broker::ClassSet set;
  for (int c = 0; c < k; ++c) {
    const auto req = ojs::ml::parse_requirements(json{{"type", "bench"}, {"args", json::array()},
                                                      {"ext_ml_gpu_count", 1}, {"ext_ml_gpu_memory_gb", 1 + c % 640},
                                                      {"ext_ml_cpu_cores", 1 + c / 640}});
    const auto cls = ojs::ml::requirement_class(req);
    set.classes[cls.id] = cls.canonical;
  }
  return set;
}

ojs::broker::WorkerView dgx_worker(const ojs::broker::Scheduler& scheduler) {
  std::ifstream file(OJS_EXAMPLES_DIR "/dgx-h100.json");
  json caps = json::parse(file);
  caps["gpu"]["memory_gb"] = 1024;  // every class fits: the eligible path (dynamic phase + scoring) is measured
  for (auto& d : caps["devices"]) d["memory_gb"] = 1024;
  ojs::broker::WorkerView w;
  w.worker_id = "bench-dgx";
  auto [parsed, fp] = scheduler.capabilities(caps);
  w.capabilities = std::move(parsed);
  w.fingerprint = std::move(fp);
  return w;
}

void report_per_class(benchmark::State& st, int k) {
  st.counters["classes"] = k;
  st.counters["ns_per_class"] =
      benchmark::Counter(static_cast<double>(st.iterations()) * k * 1e-9, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_SchedulerJudgeWarm(benchmark::State& st) {
  const int k = static_cast<int>(st.range(0));
  ojs::broker::Scheduler scheduler;
  const auto set = classes(k);
  const auto worker = dgx_worker(scheduler);
  benchmark::DoNotOptimize(scheduler.judge(set, worker));  // fills the memo
  for (auto _ : st) benchmark::DoNotOptimize(scheduler.judge(set, worker));
  report_per_class(st, k);
}

void BM_SchedulerJudgeCold(benchmark::State& st) {
  const int k = static_cast<int>(st.range(0));
  ojs::broker::Scheduler scheduler;
  const auto set = classes(k);
  auto worker = dgx_worker(scheduler);
  benchmark::DoNotOptimize(scheduler.judge(set, worker));  // classes parsed; only the memo is cold below
  long long n = 0;
  for (auto _ : st) {
    worker.fingerprint = "cold-" + std::to_string(n++);  // a worker shape never seen
    benchmark::DoNotOptimize(scheduler.judge(set, worker));
  }
  report_per_class(st, k);
}

}  // namespace

BENCHMARK(BM_SchedulerJudgeWarm)->Arg(1)->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK(BM_SchedulerJudgeCold)->Arg(1)->Arg(10)->Arg(100)->Arg(1000);
