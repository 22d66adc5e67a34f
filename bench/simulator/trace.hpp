// A synthetic GPU cluster trace: jobs (sizes 1-8 GPUs, power-law-ish; lognormal,
// heavy-tailed durations; spot / on-demand / reserved; some preferring a model; some
// declaring CPU cores and host memory; TPU jobs when the cluster has TPU workers)
// and heterogeneous workers read from examples/workers/*.json. Deterministic for
// a seed: the generator draws from its own portable RNG, not std:: distributions.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "ojs/ml/capabilities.hpp"
#include "ojs/ml/requirements.hpp"

namespace ojs::bench {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : g_(seed) {}
  double uniform() { return static_cast<double>(g_() >> 11) * 0x1.0p-53; }  // [0, 1)
  double normal();
  double lognormal(double median, double sigma) { return median * std::exp(sigma * normal()); }
  double exponential(double mean) { return -mean * std::log(1.0 - uniform()); }
  std::size_t pick(const std::vector<double>& weights);  // index drawn by weight

 private:
  std::mt19937_64 g_;  // its output sequence is fixed by the standard
};

struct SimJob {
  int id = 0;
  std::string kind;            // inference | training | sweep | cpu | tpu
  nlohmann::json document;     // the OJS job with ext_ml_* attributes
  ml::Requirements req;        // parse_requirements(document): the real parser
  std::string class_id;        // requirement_class(req).id
  double arrival_s = 0;
  double work_s = 0;           // GPU work to do, excluding model loading
  int priority = 0;            // OJS priority
  std::string tenant;          // meta.tenant_id ("" = none)
};

struct ModelSpec {
  std::string id;
  double load_s;      // time to load onto a cold worker
  double popularity;  // relative
};
const std::vector<ModelSpec>& model_catalog();
double model_load_seconds(const std::string& model_id);

struct WorkerSpec {
  std::string id;    // e.g. dgx-h100-0
  std::string type;  // the example file's stem
  ml::Capabilities caps;
};

// "dgx-h100:4,4xa100-pcie:6" -> workers, capabilities parsed (parse_capabilities)
// from <dir>/<type>.json. Throws std::runtime_error on an unknown type.
std::vector<WorkerSpec> load_workers(const std::string& mix, const std::string& dir);

// `count` jobs arriving as a Poisson process whose rate makes the offered GPU load
// `load` x the cluster's GPUs.
std::vector<SimJob> generate_trace(int count, std::uint64_t seed, double load, const std::vector<WorkerSpec>& workers);

// Saturated per pool: the same jobs, each GPU job pinned (ext_ml_gpu_type) to the
// worker type it fits with the least work per GPU so far (pools loaded as evenly as
// the constraints allow); the arrival rate gives the least loaded pool offered load
// `pool_load`.
std::vector<SimJob> generate_pool_trace(int count, std::uint64_t seed, double pool_load, const std::vector<WorkerSpec>& workers);

// Makes each job's ext_ml_estimated_duration_seconds its run time times a
// factor drawn uniformly in [1 - noise, 1 + noise] (own RNG stream from `seed`): users
// declare durations, they do not know them.
void perturb_declared_durations(std::vector<SimJob>& trace, double noise, std::uint64_t seed);

// Gives each job one of `tenants` (equal odds, own RNG stream from `seed`), as meta.tenant_id.
void assign_tenants(std::vector<SimJob>& trace, const std::vector<std::string>& tenants, std::uint64_t seed);

}  // namespace ojs::bench
