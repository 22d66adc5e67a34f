#include "simulator/elastic_report.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>

namespace ojs::bench {

namespace {

nlohmann::json to_json(const ElasticResult& r) {
  return {{"mode", r.mode}, {"jobs", r.jobs}, {"finished", r.finished}, {"utilization", r.utilization},
          {"useful_utilization", r.useful_utilization}, {"held_idle", r.held_idle}, {"waiting_idle", r.waiting_idle},
          {"jct_s", {{"mean", r.jct_s.mean}, {"p50", r.jct_s.p50}, {"p95", r.jct_s.p95}, {"max", r.jct_s.max}}},
          {"max_rho", r.max_rho}, {"mean_rho", r.mean_rho}, {"share_rho_above_1", r.share_rho_above_1},
          {"resizes", r.resizes}, {"leaves", r.leaves}, {"wall_s", r.wall_s}};
}

void print_table(const ElasticComparison& c, int gpus_per_node, const std::vector<ElasticResult>& results) {
  std::printf("elastic trace: %d training jobs, seed %llu, offered load %.2f (one-node work) over %.1f h of arrivals "
              "(busy and quiet spells of %.0f h); cluster: %d x %s (%d GPUs each); a resize restarts after %.0f s\n\n",
              c.trace.jobs, static_cast<unsigned long long>(c.trace.seed), c.trace.load, results[0].arrival_span_s / 3600,
              c.trace.spell_s / 3600, c.trace.nodes, c.node_type.c_str(), gpus_per_node, c.sim.restart_s);
  std::printf("%-9s %6s %7s %6s %8s %10s %10s %8s %9s %7s %6s %8s %8s\n", "gangs", "util", "useful", "held", "idle+job", "JCT mean", "JCT p95",
              "max rho", "rho > 1", "resizes", "leaves", "finished", "wall");
  for (const auto& r : results)
    std::printf("%-9s %5.1f%% %6.1f%% %5.1f%% %7.1f%% %9.2fh %9.2fh %8.2f %8.1f%% %7lld %6lld %8d %7.1fs\n", r.mode.c_str(),
                100 * r.utilization, 100 * r.useful_utilization, 100 * r.held_idle, 100 * r.waiting_idle, r.jct_s.mean / 3600,
                r.jct_s.p95 / 3600,
                r.max_rho, 100 * r.share_rho_above_1, r.resizes, r.leaves, r.finished, r.wall_s);
}

// Elastic beats fixed: fewer GPUs idle while a job waits, a lower mean JCT, a max rho
// no higher. Not the utilisation itself: over a long trace both modes run the same
// work (within 0.5 point), elastic's in fewer GPU-hours (smaller gangs scale better);
// what a fixed gang wastes is the GPUs it holds idle while it forms.
bool elastic_better(const ElasticResult& fixed, const ElasticResult& elastic) {
  bool ok = elastic.finished == elastic.jobs && fixed.finished == fixed.jobs;
  const auto fail = [&](const char* what, double f, double e) {
    std::cerr << "ELASTIC NOT BETTER: " << what << " fixed " << f << ", elastic " << e << "\n";
    ok = false;
  };
  if (elastic.waiting_idle >= fixed.waiting_idle) fail("GPUs idle while a job waits", fixed.waiting_idle, elastic.waiting_idle);
  if (elastic.jct_s.mean >= fixed.jct_s.mean) fail("mean JCT (s)", fixed.jct_s.mean, elastic.jct_s.mean);
  if (elastic.max_rho > fixed.max_rho) fail("max rho", fixed.max_rho, elastic.max_rho);
  return ok;
}

}  // namespace

int compare_gang_modes(const ElasticComparison& c) {
  std::vector<ElasticResult> results;
  int gpus_per_node = 0;
  try {
    const auto workers = load_workers(c.node_type + ":1", c.workers_dir);
    gpus_per_node = workers.at(0).caps.gpu.count;
    const auto trace = generate_elastic_trace(c.trace);
    for (const auto mode : {GangMode::fixed, GangMode::fixed_min, GangMode::elastic}) {
      ElasticSimOptions sim = c.sim;
      sim.mode = mode;
      results.push_back(simulate_gangs(trace, workers.at(0), c.trace.nodes, sim));
    }
  } catch (const std::exception& e) {
    std::cerr << "cluster_sim: " << e.what() << "\n";
    return 2;
  }
  if (c.json) {
    nlohmann::json out = {{"jobs", c.trace.jobs}, {"seed", c.trace.seed}, {"load", c.trace.load}, {"nodes", c.trace.nodes},
                          {"node_type", c.node_type}, {"restart_s", c.sim.restart_s}, {"results", nlohmann::json::array()}};
    for (const auto& r : results) out["results"].push_back(to_json(r));
    std::cout << out.dump(2) << std::endl;
  } else {
    print_table(c, gpus_per_node, results);
  }
  return c.check && !elastic_better(results.front(), results.back()) ? 1 : 0;
}

}  // namespace ojs::bench
