// What the elastic-gang comparison reports of one run: utilisation while jobs
// arrive, job completion times, and Themis' finish-time fairness (Mahajan et al.,
// NSDI 2020): rho = T_shared / T_independent, a job's completion time in the shared
// cluster over its run time alone on 1/N of it, N the mean number of jobs in the
// system over the job's life. rho > 1: the job did worse than its fair slice.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "common/stats.hpp"
#include "simulator/elastic_trace.hpp"

namespace ojs::bench {

// The number of jobs in the system (arrived, not finished) as a step function of time.
class JobsInSystem {
 public:
  void arrive(double t) { change(t, +1); }
  void leave(double t) { change(t, -1); }
  // Its mean over [from, to] (the count at `from` when the span is empty).
  double mean(double from, double to) const;

 private:
  void change(double t, int delta);
  double integral_to(double t) const;
  std::map<double, int> count_from_;      // t -> jobs from t on
  std::map<double, double> integral_at_;  // t -> the count's integral over [0, t]
};

// T_independent: `job` alone on `nodes` / `jobs_in_system` of the cluster, its nodes
// clamped to [min, max] (fractional nodes on its speed-up curve; no restarts, no wait).
double independent_run_s(const ElasticJob& job, int nodes, double jobs_in_system);

struct ElasticResult {
  std::string mode;
  int jobs = 0, finished = 0;
  double arrival_span_s = 0;
  double utilization = 0;         // GPUs in started gangs / all GPUs, while jobs arrive
  double useful_utilization = 0;  // the same less the restarts after a resize
  double held_idle = 0;           // GPUs held by a gang still forming, same denominator
  double waiting_idle = 0;        // GPUs in no started gang while a job waits (held or free), same
  Percentiles jct_s;              // completion - arrival
  double max_rho = 0, mean_rho = 0, share_rho_above_1 = 0;
  long long resizes = 0;          // gangs grown or shrunk (each restarts its members)
  long long leaves = 0;           // members that left an elastic gang for a waiting one (share shrink)
  double wall_s = 0;
};

// The JCT and fairness figures from each job's arrival and finish (all finished).
void completion_figures(const std::vector<ElasticJob>& trace, const std::vector<double>& finish_s, int nodes,
                        const JobsInSystem& in_system, ElasticResult& result);

}  // namespace ojs::bench
