#include "simulator/trace.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "ojs/ml/predicates.hpp"
#include "ojs/ml/requirement_class.hpp"

namespace ojs::bench {

double Rng::normal() {  // Box-Muller
  const double u1 = 1.0 - uniform(), u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

std::size_t Rng::pick(const std::vector<double>& weights) {
  double total = 0;
  for (double w : weights) total += w;
  double x = uniform() * total;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    if (x < weights[i]) return i;
    x -= weights[i];
  }
  return weights.size() - 1;
}

const std::vector<ModelSpec>& model_catalog() {
  static const std::vector<ModelSpec> models = {
      {"llama-3.1-8b", 120, 8},       {"llama-3.1-70b", 420, 3},  {"mistral-7b", 120, 4},
      {"whisper-large-v3", 60, 3},    {"sdxl-1.0", 90, 2},       {"customer-intent-classifier", 20, 2}};
  return models;
}

double model_load_seconds(const std::string& model_id) {
  for (const auto& m : model_catalog())
    if (m.id == model_id) return m.load_s;
  return 60;
}

std::vector<WorkerSpec> load_workers(const std::string& mix, const std::string& dir) {
  std::vector<WorkerSpec> workers;
  std::stringstream in(mix);
  for (std::string item; std::getline(in, item, ',');) {
    const auto colon = item.find(':');
    const std::string type = item.substr(0, colon);
    const int count = colon == std::string::npos ? 1 : std::stoi(item.substr(colon + 1));
    std::ifstream file(dir + "/" + type + ".json");
    if (!file) throw std::runtime_error("unknown worker type '" + type + "': no " + dir + "/" + type + ".json");
    const auto caps = ml::parse_capabilities(nlohmann::json::parse(file));
    for (int i = 0; i < count; ++i) workers.push_back({type + "-" + std::to_string(i), type, caps});
  }
  return workers;
}

namespace {

const char* priority_class_name(std::size_t i) {
  static const char* names[] = {"spot", "on-demand", "reserved"};
  return names[i];
}

// Sizes 1-8, power-law-ish, with the powers of two most common.
int draw_gpu_count(Rng& rng) {
  static const std::vector<double> w = {0.40, 0.22, 0.03, 0.17, 0.02, 0.03, 0.01, 0.12};
  return static_cast<int>(rng.pick(w)) + 1;
}

nlohmann::json make_document(Rng& rng, SimJob& job) {
  nlohmann::json d = {{"type", "sim." + job.kind}, {"args", nlohmann::json::array({job.id})}};
  auto set_class = [&](const std::vector<double>& weights) {
    d["ext_ml_priority_class"] = priority_class_name(rng.pick(weights));
  };
  if (job.kind == "inference") {  // one GPU, prefers its model (soft: locality)
    std::vector<double> pop;
    for (const auto& m : model_catalog()) pop.push_back(m.popularity);
    d["ext_ml_gpu_count"] = 1;
    d["ext_ml_gpu_memory_gb"] = rng.uniform() < 0.6 ? 16 : 24;
    d["ext_ml_model_id"] = model_catalog()[rng.pick(pop)].id;
    set_class({0.15, 0.70, 0.15});
    job.work_s = std::min(rng.lognormal(300, 1.0), 4 * 3600.0);
  } else if (job.kind == "training") {
    const int n = draw_gpu_count(rng);
    d["ext_ml_gpu_count"] = n;
    d["ext_ml_gpu_memory_gb"] = rng.uniform() < 0.35 ? 80 : 40;
    if (n >= 4 && rng.uniform() < 0.5) d["ext_ml_gpu_interconnect"] = "nvlink";
    d["ext_ml_precision"] = "bf16";
    d["ext_ml_checkpoint_enabled"] = true;
    d["ext_ml_checkpoint_interval_s"] = rng.uniform() < 0.5 ? 600 : 1800;
    d["ext_ml_checkpoint_storage_uri"] = "s3://ckpt/sim/";
    set_class({0.45, 0.35, 0.20});
    job.work_s = std::min(rng.lognormal(3600, 1.2), 48 * 3600.0);
  } else if (job.kind == "sweep") {  // hyper-parameter sweep on spot capacity
    d["ext_ml_gpu_count"] = 1;
    d["ext_ml_priority_class"] = "spot";
    d["ext_ml_checkpoint_enabled"] = true;
    d["ext_ml_checkpoint_interval_s"] = 300;
    d["ext_ml_checkpoint_storage_uri"] = "s3://ckpt/sweep/";
    if (rng.uniform() < 0.5) d["ext_ml_checkpoint_on_preempt"] = true;
    job.work_s = std::min(rng.lognormal(1200, 1.0), 12 * 3600.0);
  } else {  // cpu
    d["ext_ml_accelerator"] = "cpu";
    d["ext_ml_cpu_cores"] = rng.uniform() < 0.5 ? 8 : 16;
    set_class({0.3, 0.6, 0.1});
    job.work_s = std::min(rng.lognormal(600, 1.0), 6 * 3600.0);
  }
  return d;
}

// CPU cores and host memory declared near the workers' sizes, and TPU jobs, so that
// what running jobs hold of each binds (each on its own: two 4-chip TPU jobs exceed a
// v5e host's memory only, two 8-chip ones its cores, 8 + 16 chips its chips) and the
// simulator's capacity check has each of them to catch. The declarations follow
// attributes the jobs already have, so the requirement classes (each one more for every
// FETCH to judge) are as many as without them. With TPU workers in the cluster, half
// the CPU jobs become TPU training (a v5e host: 16 chips, 224 cores, 1,536 GB), drawn
// from a stream of its own: the seed's arrivals and GPU work stay what they were.
void declare_host_demand(Rng& rng, SimJob& job, bool tpu_workers) {
  auto& d = job.document;
  if (job.kind == "cpu" && tpu_workers && rng.uniform() < 0.5) {
    struct Slice {
      int chips, cores, memory_gb;
    };
    static const Slice slices[] = {{4, 64, 1024}, {8, 128, 256}, {16, 96, 512}};
    const auto& slice = slices[rng.pick({0.3, 0.5, 0.2})];
    job.kind = "tpu";
    d["type"] = "sim.tpu";
    d.erase("ext_ml_accelerator");
    d["ext_ml_tpu_type"] = "v5e";
    d["ext_ml_tpu_chip_count"] = slice.chips;
    d["ext_ml_cpu_cores"] = slice.cores;
    d["ext_ml_memory_gb"] = slice.memory_gb;
    job.work_s = std::min(job.work_s * 6, 24 * 3600.0);  // training runs, hours long
  } else if (job.kind == "cpu" && d["ext_ml_cpu_cores"] == 16) {
    d["ext_ml_memory_gb"] = 96;  // of a 128 GB CPU node
  } else if (job.kind == "training" && d["ext_ml_gpu_memory_gb"] == 80) {  // big models: data loaders, staged weights
    const int gpus = d["ext_ml_gpu_count"].get<int>();
    d["ext_ml_cpu_cores"] = gpus * 12;
    d["ext_ml_memory_gb"] = gpus * 120;
  } else if (job.kind == "inference" && d["ext_ml_gpu_memory_gb"] == 24) {
    d["ext_ml_cpu_cores"] = 8;
    d["ext_ml_memory_gb"] = 48;
  }
}

}  // namespace

std::vector<SimJob> generate_trace(int count, std::uint64_t seed, double load, const std::vector<WorkerSpec>& workers) {
  Rng rng(seed);
  Rng host_rng(seed ^ 0x686f7374ULL);  // "host": declare_host_demand's stream
  const bool tpu_workers = std::any_of(workers.begin(), workers.end(), [](const WorkerSpec& w) { return w.caps.tpu.chip_count > 0; });
  static const std::vector<std::string> kinds = {"inference", "training", "sweep", "cpu"};
  static const std::vector<double> kind_weights = {0.35, 0.30, 0.25, 0.10};
  std::vector<SimJob> jobs(static_cast<std::size_t>(count));
  double gpu_seconds = 0;
  for (int i = 0; i < count; ++i) {
    SimJob& j = jobs[static_cast<std::size_t>(i)];
    j.id = i;
    j.kind = kinds[rng.pick(kind_weights)];
    j.document = make_document(rng, j);
    declare_host_demand(host_rng, j, tpu_workers);
    j.req = ml::parse_requirements(j.document);
    j.class_id = ml::requirement_class(j.req).id;
    gpu_seconds += j.work_s * j.req.gpu_count();
  }
  int total_gpus = 0;
  for (const auto& w : workers) total_gpus += w.caps.gpu.count;
  // Offered load = arrival rate x mean GPU-seconds per job / GPUs.
  const double mean_gap = total_gpus > 0 && gpu_seconds > 0 ? gpu_seconds / count / (load * total_gpus) : 60;
  double t = 0;
  for (auto& j : jobs) {
    t += rng.exponential(mean_gap);
    j.arrival_s = t;
    // The producer declares the run time (sjf, backfill): the work itself, rounded up.
    const int declared = static_cast<int>(std::ceil(std::max(1.0, j.work_s)));
    j.document["ext_ml_estimated_duration_seconds"] = declared;
    j.req.scheduling.estimated_duration_seconds = declared;
  }
  return jobs;
}

std::vector<SimJob> generate_pool_trace(int count, std::uint64_t seed, double pool_load, const std::vector<WorkerSpec>& workers) {
  auto jobs = generate_trace(count, seed, 1.0, workers);
  std::map<std::string, std::pair<const ml::Capabilities*, int>> pools;  // type -> (capabilities, GPUs)
  for (const auto& w : workers)
    if (w.caps.gpu.count > 0) {
      pools[w.type].first = &w.caps;
      pools[w.type].second += w.caps.gpu.count;
    }
  std::map<std::string, double> gpu_s;
  for (auto& j : jobs) {
    if (j.req.gpu_count() == 0) continue;
    // The fitting pool with the least work per GPU so far: the pools' loads stay as
    // even as the jobs' constraints allow.
    const double work = j.work_s * j.req.gpu_count();
    std::string pick;
    for (const auto& [name, pool] : pools)
      if (ml::fits_static(j.req, pool.first) &&
          (pick.empty() || (gpu_s[name] + work) / pool.second < (gpu_s[pick] + work) / pools[pick].second))
        pick = name;
    if (pick.empty()) continue;
    j.document["ext_ml_gpu_type"] = pools[pick].first->gpu.type;
    j.req = ml::parse_requirements(j.document);
    j.class_id = ml::requirement_class(j.req).id;
    gpu_s[pick] += j.work_s * j.req.gpu_count();
  }
  // Offered load of a pool = its GPU-seconds / (its GPUs x arrival span): the span
  // that gives the least loaded pool `pool_load`; arrivals are scaled to it.
  double span = 0;
  for (const auto& [name, pool] : pools) {
    const double s = gpu_s[name] / (pool_load * pool.second);
    if (gpu_s[name] > 0 && (span == 0 || s < span)) span = s;
  }
  if (!jobs.empty() && span > 0 && jobs.back().arrival_s > 0) {
    const double k = span / jobs.back().arrival_s;
    for (auto& j : jobs) j.arrival_s *= k;
  }
  return jobs;
}

void assign_tenants(std::vector<SimJob>& trace, const std::vector<std::string>& tenants, std::uint64_t seed) {
  if (tenants.empty()) return;
  Rng rng(seed ^ 0x74656e616e74ULL);
  const std::vector<double> equal(tenants.size(), 1.0);
  for (auto& j : trace) {
    j.tenant = tenants[rng.pick(equal)];
    j.document["meta"]["tenant_id"] = j.tenant;
  }
}

void perturb_declared_durations(std::vector<SimJob>& trace, double noise, std::uint64_t seed) {
  if (noise <= 0) return;
  Rng rng(seed ^ 0x657374696d617465ULL);  // "estimate": a stream of its own
  for (auto& j : trace) {
    if (!j.req.scheduling.estimated_duration_seconds) continue;
    const double factor = 1 + noise * (2 * rng.uniform() - 1);
    const int declared = static_cast<int>(std::ceil(std::max(1.0, j.work_s * factor)));
    j.document["ext_ml_estimated_duration_seconds"] = declared;
    j.req.scheduling.estimated_duration_seconds = declared;
  }
}

}  // namespace ojs::bench
