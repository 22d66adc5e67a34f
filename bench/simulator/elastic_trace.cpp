#include "simulator/elastic_trace.hpp"

#include <algorithm>

#include "ojs/ml/requirement_class.hpp"

namespace ojs::bench {

namespace {

struct Shape {
  int min_nodes, max_nodes;
};
constexpr Shape kShapes[] = {{1, 2}, {1, 4}, {2, 8}, {4, 8}};
const std::vector<double> kShapeWeights = {0.3, 0.3, 0.25, 0.15};
constexpr double kMedianWork_s = 6 * 3600, kMaxWork_s = 72 * 3600;
// The longest ext_ml_gang.timeout_seconds the parser accepts.
constexpr int kGangTimeout_s = 3600;

}  // namespace

std::vector<ElasticJob> generate_elastic_trace(const ElasticTraceOptions& o) {
  Rng rng(o.seed * 0x9e3779b97f4a7c15ULL + 51);
  std::vector<ElasticJob> jobs(static_cast<std::size_t>(o.jobs));
  double work = 0;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    auto& j = jobs[i];
    j.id = static_cast<int>(i);
    const Shape shape = kShapes[rng.pick(kShapeWeights)];
    j.min_nodes = std::min(shape.min_nodes, o.nodes);
    j.max_nodes = std::min(shape.max_nodes, o.nodes);
    j.work_s = std::min(rng.lognormal(kMedianWork_s, 1.0), kMaxWork_s);
    j.alpha = 0.7 + 0.25 * rng.uniform();
    work += j.work_s;
  }
  // The mean gap gives the offered load over the whole span; a spell's rate scales it.
  const double mean_gap = work / jobs.size() / (o.load * o.nodes);
  double t = 0;
  for (auto& j : jobs) {
    const bool busy = std::fmod(t, 2 * o.spell_s) < o.spell_s;
    t += rng.exponential(mean_gap / (busy ? 1.75 : 0.25));
    j.arrival_s = t;
  }
  return jobs;
}

const char* gang_mode_name(GangMode mode) {
  return mode == GangMode::fixed ? "fixed" : mode == GangMode::fixed_min ? "fixed-min" : "elastic";
}

SimJob gang_job(const ElasticJob& job, GangMode mode, int gpus_per_node) {
  SimJob s;
  s.id = job.id;
  s.kind = "training";
  s.arrival_s = job.arrival_s;
  s.work_s = job.work_s;
  nlohmann::json gang = {{"timeout_seconds", kGangTimeout_s}};
  if (mode == GangMode::fixed || job.min_nodes == job.max_nodes) {
    gang["size"] = job.max_nodes;
  } else if (mode == GangMode::fixed_min) {
    gang["size"] = std::max(job.min_nodes, 2);  // a fixed gang has 2 members or more: a 1..n job runs on 2
  } else {
    gang["min_size"] = job.min_nodes;
    gang["max_size"] = job.max_nodes;
  }
  s.document = {{"type", "sim.training"},
                {"args", nlohmann::json::array({job.id})},
                {"ext_ml_gpu_count", gpus_per_node},
                {"ext_ml_gang", gang}};
  s.req = ml::parse_requirements(s.document);
  s.class_id = ml::requirement_class(s.req).id;
  return s;
}

}  // namespace ojs::bench
