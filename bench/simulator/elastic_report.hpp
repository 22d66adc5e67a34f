// cluster_sim --elastic-trace: the same trace of elastic training jobs pushed as
// fixed gangs and as elastic ones, side by side (elastic_sim.hpp runs each), and
// the check that elastic gangs do better: fewer GPUs idle while a job waits and a
// lower mean job completion time without a higher max finish-time fairness (rho).
#pragma once
#include <string>

#include "simulator/elastic_sim.hpp"

namespace ojs::bench {

struct ElasticComparison {
  ElasticTraceOptions trace;
  std::string node_type = "dgx-h100";  // a node: one worker of this examples/workers type
  std::string workers_dir;
  ElasticSimOptions sim;
  bool json = false;
  bool check = false;  // exit 1 (ELASTIC NOT BETTER) unless elastic beats fixed as above
};

// Runs both modes, prints the figures; returns the exit status (2: cannot run).
int compare_gang_modes(const ElasticComparison& comparison);

}  // namespace ojs::bench
