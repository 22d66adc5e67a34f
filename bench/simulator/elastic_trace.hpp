// A trace of distributed training jobs that may run on min..max whole nodes (an
// elastic gang, ext_ml_gang {min_size, max_size}), each with its work and its own
// speed-up curve, arriving in busy and quiet spells so that the cluster is
// sometimes contended and sometimes idle. The same trace is pushed either as fixed
// gangs or as elastic ones (gang_job). Deterministic for a seed.
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include "simulator/trace.hpp"

namespace ojs::bench {

struct ElasticJob {
  int id = 0;
  double arrival_s = 0;
  int min_nodes = 1, max_nodes = 1;
  double work_s = 0;  // its run time on one node
  double alpha = 1;   // speed-up on n nodes: n^alpha (data parallelism losing to communication)

  double speedup(double nodes) const { return std::pow(nodes, alpha); }
  double run_s(double nodes) const { return work_s / speedup(nodes); }
};

struct ElasticTraceOptions {
  int jobs = 200;
  std::uint64_t seed = 1;
  double load = 0.8;         // one-node work offered / (nodes x the arrival span)
  int nodes = 16;            // the cluster's nodes (a job's max never exceeds them)
  double spell_s = 12 * 3600;  // busy and quiet spells alternate, each this long
};

// Shapes (min..max nodes): 1..2, 1..4, 2..8, 4..8; work on one node lognormal
// (median 6 h, sigma 1, at most 72 h); alpha uniform in [0.7, 0.95]. Arrivals are a
// Poisson process whose rate is 1.75x the mean in busy spells and 0.25x in quiet ones.
std::vector<ElasticJob> generate_elastic_trace(const ElasticTraceOptions& options);

// How the jobs are pushed: fixed gangs of their max nodes (what a user without
// elastic gangs asks for to run fast: `size` = max), fixed gangs of their min nodes
// (to start soon: `size` = min, at least 2 as every fixed gang), or elastic min..max.
enum class GangMode { fixed, fixed_min, elastic };
const char* gang_mode_name(GangMode mode);

// The OJS job for `job` as pushed in `mode`: a whole node per member (`gpus_per_node`),
// ext_ml_gang with the broker's longest forming timeout (a fixed gang waits for its
// nodes rather than giving them back each minute), parsed by the real parser.
SimJob gang_job(const ElasticJob& job, GangMode mode, int gpus_per_node);

}  // namespace ojs::bench
