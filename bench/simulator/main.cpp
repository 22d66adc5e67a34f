// cluster_sim: replays a synthetic GPU trace through the real matching code with
// simulated time and compares the broker's policy with first-fit FIFO.
// Exits 1 (printing OVERSUBSCRIBED) if any placement exceeded a worker's capacity.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <iostream>
#include <map>

#include "broker/governance/queue_config.hpp"
#include "simulator/elastic_report.hpp"
#include "simulator/sim.hpp"
#include "simulator/trace.hpp"

using nlohmann::json;
using namespace ojs::bench;

namespace {

const char* kClasses[] = {"spot", "on-demand", "reserved"};

json pools_json(const SimResult& r) {
  json out = json::object();
  for (const auto& [type, p] : r.pools)
    out[type] = {{"gpus", p.gpus}, {"offered_fit", p.offered_fit}, {"offered_share", p.offered_share},
                 {"utilization", p.utilization}, {"stranded", p.stranded}};
  return out;
}

json percentiles_json(const Percentiles& p) {
  return {{"count", p.count}, {"p50", p.p50}, {"p95", p.p95}, {"p99", p.p99}, {"max", p.max}, {"mean", p.mean}};
}

json estimate_json(const EstimateAccuracy& a) {
  return {{"made", a.made}, {"unknown", a.unknown}, {"measured", a.measured}, {"abs_error_s", percentiles_json(a.abs_error_s)},
          {"rel_error", percentiles_json(a.rel_error)}, {"signed_error_s", percentiles_json(a.signed_error_s)},
          {"within_10_20_50_100_beyond", a.rel_buckets}, {"started_before_estimate", a.early},
          {"started_by_start_at_p90", a.by_late}, {"started_by_start_at_p90_all", a.by_late_all},
          {"started_by_start_at_p90_told_60s", a.by_late_told}, {"p90_minus_start_s", percentiles_json(a.late_width_s)}};
}

json to_json(const SimResult& r) {
  json waits = json::object();
  for (const auto& [name, p] : r.wait_s)
    waits[name] = {{"jobs", p.count}, {"p50_s", p.p50}, {"p95_s", p.p95}, {"p99_s", p.p99}, {"mean_s", p.mean}};
  return {{"policy", r.policy}, {"jobs", r.jobs}, {"finished", r.finished}, {"unfinished", r.unfinished},
          {"makespan_s", r.makespan_s}, {"gpu_utilization", r.gpu_utilization},
          {"useful_utilization", r.useful_utilization}, {"offered_load", r.offered_load},
          {"arrival_utilization", r.arrival_utilization}, {"stranded_gpu_hours", r.stranded_gpu_hours}, {"arrival_stranded", r.arrival_stranded},
          {"tenant_gpu_hours", r.tenant_gpu_hours}, {"tenant_uncontested_gpu_hours", r.tenant_uncontested_gpu_hours}, {"wait_s", waits},
          {"locality_jobs", r.locality_jobs}, {"locality_hits", r.locality_hits},
          {"locality_hit_rate", r.locality_hit_rate()}, {"model_loads", r.model_loads},
          {"preemptions", r.preemptions}, {"lost_gpu_hours", r.lost_gpu_hours},
          {"oversubscriptions", r.oversubscriptions}, {"oversubscribed", r.oversubscribed},
          {"constraint_violations", r.constraint_violations},
          {"judgements", r.judgements}, {"wall_s", r.wall_s},
          {"wait_8gpu_s", {{"jobs", r.wait_8gpu_s.count}, {"p50_s", r.wait_8gpu_s.p50}, {"p95_s", r.wait_8gpu_s.p95}}},
          {"backfill_reservations", r.backfill_reservations}, {"pools", pools_json(r)},
          {"estimate", estimate_json(r.estimate)}};
}

void print_table(const std::vector<SimResult>& results) {
  std::printf("%-15s %6s %6s %6s %8s", "policy", "util", "useful", "arrUt", "makespan");
  for (const char* c : kClasses) std::printf("  %-22s", (std::string("wait ") + c + " p50/p95/p99").c_str());
  std::printf(" %8s %7s %8s %7s %8s\n", "locality", "preempt", "lost_gpuh", "oversub", "unfinish");
  for (const auto& r : results) {
    std::printf("%-15s %5.1f%% %5.1f%% %5.1f%% %7.1fh", r.policy.c_str(), 100 * r.gpu_utilization, 100 * r.useful_utilization,
                100 * r.arrival_utilization, r.makespan_s / 3600);
    for (const char* c : kClasses) {
      auto it = r.wait_s.find(c);
      if (it == r.wait_s.end()) {
        std::printf("  %-22s", "-");
        continue;
      }
      char cell[64];
      std::snprintf(cell, sizeof cell, "%.0f/%.0f/%.0f min", it->second.p50 / 60, it->second.p95 / 60, it->second.p99 / 60);
      std::printf("  %-22s", cell);
    }
    std::printf(" %7.1f%% %7lld %9.1f %7lld %8d\n", 100 * r.locality_hit_rate(), r.preemptions, r.lost_gpu_hours,
                r.oversubscriptions, r.unfinished);
  }
}

// --elastic-trace and its own options (elastic_report.hpp); --jobs, --seed, --load,
// --workers-dir, --redis-server and --json apply to it too.
void add_elastic_options(CLI::App& app, ElasticComparison& c, bool& on) {
  app.add_flag("--elastic-trace", on,
                          "instead: a trace of elastic training jobs (min..max whole nodes, speed-up n^alpha per job) run "
                          "as fixed gangs (size = max, then size = min) and as elastic ones (min_size..max_size) through the broker's gang "
                          "claim; prints utilisation, JCT and finish-time fairness (default --jobs 300, --load 0.8)");
  app.add_option("--nodes", c.trace.nodes, "--elastic-trace: the cluster's nodes (workers)")->check(CLI::Range(8, 64));
  app.add_option("--node-type", c.node_type, "--elastic-trace: the nodes' type (a file stem in --workers-dir)");
  app.add_option("--restart-s", c.sim.restart_s, "--elastic-trace: seconds without progress after a resize (restart from the checkpoint)")
      ->check(CLI::Range(0.0, 86400.0));
  app.add_option("--spell-s", c.trace.spell_s, "--elastic-trace: length of the alternating busy and quiet arrival spells")
      ->check(CLI::Range(60.0, 1e7));
  app.add_flag("--no-share-shrink", [&c](std::int64_t) { c.sim.share_shrink = false; },
               "--elastic-trace: members of elastic gangs above their share do not leave for a waiting equal gang (the "
               "preemption controller's share shrink off: grown gangs keep their nodes until they end)");
  app.add_flag("--elastic-check", c.check,
               "--elastic-trace: exit 1 (ELASTIC NOT BETTER) unless elastic leaves fewer GPUs idle while a job waits, "
               "has a lower mean JCT and no higher max rho than fixed");
}

}  // namespace

int main(int argc, char** argv) {
  int jobs = 5000;
  std::uint64_t seed = 1;
  double load = 0.9;
  std::string mix = "dgx-h100:4,4xa100-pcie:6,l4-inference:8,cpu-node:4,tpu-v5e:2";
  std::string dir = OJS_EXAMPLES_DIR;
  std::string policy = "priority", tenants;
  double tenant_tolerance = 0;
  SimOptions ours;
  bool json_output = false;
  CLI::App app{"Cluster simulator: replays a synthetic GPU trace through the real matcher (simulated time)"};
  app.add_option("--jobs", jobs, "jobs in the trace")->check(CLI::Range(1, 1000000));
  app.add_option("--seed", seed, "trace seed (same seed, same trace, same figures)");
  app.add_option("--load", load, "offered GPU load as a fraction of the cluster's GPUs")->check(CLI::Range(0.05, 5.0));
  app.add_option("--workers-mix", mix, "type:count,... where type is a file stem in --workers-dir");
  app.add_option("--workers-dir", dir, "directory of worker capability JSON files");
  app.add_option("--locality-delay-s", ours.locality_delay_s, "delay scheduling bound for model locality")->check(CLI::Range(0.0, 86400.0));
  app.add_option("--models-per-worker", ours.models_per_worker, "models a worker keeps loaded (LRU)")->check(CLI::Range(1, 64));
  app.add_option("--policy", policy, "the queue policy of our broker: priority, fifo, sjf, fair");
  app.add_option("--tenants", tenants, "tenant:weight,... : jobs get a tenant (equal odds); the weights configure fair share");
  app.add_option("--half-life-s", ours.half_life_seconds,
                 "the fair policy's tenant_fairness.half_life_seconds (default: the broker's, 3600; 0 = held now only)")
      ->check(CLI::Range(0.0, 31536000.0));
  app.add_option("--tenant-window-start-s", ours.tenant_window_start_s, "start of the window measuring GPU-time per tenant");
  app.add_option("--tenant-window-s", ours.tenant_window_s, "length of that window (0: to the trace's last arrival)");
  app.add_option("--tenant-tolerance", tenant_tolerance,
                 "exit 1 unless each tenant's GPU-time share (ours) is within this fraction of its weight share (0 = no check)");
  app.add_option("--redis-server", ours.redis_binary, "redis-server binary our broker's queue runs on");
  std::string fair_order = "tenant";
  app.add_option("--fair-order", fair_order, "the fair policy's tenant_fairness.order: tenant (the default) or class")
      ->check(CLI::IsMember({"tenant", "class"}));
  std::string one_class;
  app.add_option("--one-class", one_class,
                 "every job of the trace in this priority class (spot, on-demand, reserved): the fair order's "
                 "shares within one class")->check(CLI::IsMember({"spot", "on-demand", "reserved"}));
  long long max_preemptions = -1;
  app.add_option("--max-preemptions", max_preemptions,
                 "exit 1 (CHURN) when our policy preempts more than this many times (-1 = no check)");
  app.add_option("--preemption", ours.preemption, "our policy preempts as the broker's controller does: lower-class work for a waiting higher-class job (true/false)");
  app.add_flag("--json", json_output, "print one JSON object");
  app.add_flag("--hide-host-load", ours.hide_host_load,
               "test only: FETCH is not told the CPU cores, host memory and TPU chips running jobs declared "
               "(the capacity check must then fail)");
  bool backfill = false;
  double pool_load = 0;
  app.add_flag("--backfill", backfill, "also run our policy with EASY backfill (queue config backfill)");
  double declared_noise = 0;
  app.add_flag("--estimates", ours.estimates, "our policy: the broker's start estimate at each arrival, its error at the start");
  app.add_option("--estimate-preemption", ours.estimate_preemption,
                 "the estimate's run preempts as the broker's controller does (true/false; false measures without it)");
  std::string oracle = "none";
  app.add_option("--estimate-oracle", oracle,
                 "diagnosis only: tell the estimate what no broker knows: ends (running jobs' true ends), durations (also "
                 "waiting jobs' true run times), arrivals (also the trace's later arrivals); none")
      ->check(CLI::IsMember({"none", "ends", "durations", "arrivals"}));
  app.add_option("--progress-every-s", ours.progress_every_s,
                 "running jobs report their progress (true share of the attempt's work done) every N simulated seconds; 0: never")
      ->check(CLI::Range(0.0, 1e9));
  std::string progress_of = "attempt";
  app.add_option("--progress-of", progress_of,
                 "what the progress reports count: attempt (its share of this attempt's work) or job (of the whole job's: "
                 "a job resumed from a checkpoint reports from where it resumed)")
      ->check(CLI::IsMember({"attempt", "job"}));
  app.add_option("--estimate-log", ours.estimate_log, "a CSV line per job at its first start: its estimate at arrival against the start");
  app.add_option("--declared-noise", declared_noise,
                 "declared durations drawn within +-this fraction of the run time (0: exact)")->check(CLI::Range(0.0, 0.9));
  app.add_option("--backfill-after-s", ours.backfill_after_s, "backfill.after_s: wait before a job gets a reservation");
  app.add_option("--pool-load", pool_load,
                 "saturated per pool: GPU jobs pinned to a worker type (ext_ml_gpu_type), arrivals at the rate that "
                 "gives the least loaded pool this offered load (overrides --load)")->check(CLI::Range(0.0, 5.0));
  ElasticComparison elastic;
  bool elastic_trace = false;
  add_elastic_options(app, elastic, elastic_trace);
  CLI11_PARSE(app, argc, argv);
  if (elastic_trace) {
    elastic.trace.jobs = app.count("--jobs") ? jobs : 300;
    elastic.trace.seed = seed;
    elastic.trace.load = app.count("--load") ? load : 0.8;
    elastic.workers_dir = dir;
    elastic.sim.redis_binary = ours.redis_binary;
    elastic.json = json_output;
    return compare_gang_modes(elastic);
  }

  std::vector<WorkerSpec> workers;
  try {
    workers = load_workers(mix, dir);
  } catch (const std::exception& e) {
    std::cerr << "cluster_sim: " << e.what() << "\n";
    return 2;
  }
  const auto parsed_policy = ojs::broker::governance::parse_policy(policy);
  if (!parsed_policy) {
    std::cerr << "cluster_sim: unknown --policy " << policy << "\n";
    return 2;
  }
  ours.queue_policy = *parsed_policy;
  ours.progress_of_job = progress_of == "job";
  ours.fair_order = fair_order == "class" ? ojs::broker::FairOrder::priority_class : ojs::broker::FairOrder::tenant;
  ours.estimate_oracle = oracle == "ends"        ? SimOptions::Oracle::ends
                         : oracle == "durations" ? SimOptions::Oracle::durations
                         : oracle == "arrivals"  ? SimOptions::Oracle::arrivals
                                                 : SimOptions::Oracle::none;
  std::vector<std::string> tenant_names;
  {
    std::stringstream in(tenants);
    for (std::string item; std::getline(in, item, ',');) {
      const auto colon = item.find(':');
      const std::string name = item.substr(0, colon);
      tenant_names.push_back(name);
      ours.tenant_weights[name] = colon == std::string::npos ? 1.0 : std::stod(item.substr(colon + 1));
    }
  }
  auto trace = pool_load > 0 ? generate_pool_trace(jobs, seed, pool_load, workers) : generate_trace(jobs, seed, load, workers);
  assign_tenants(trace, tenant_names, seed);
  if (ours.tenant_window_s <= 0) {  // the window runs to the last arrival (each seed's own)
    double last = 0;
    for (const auto& j : trace) last = std::max(last, j.arrival_s);
    ours.tenant_window_s = std::max(0.0, last - ours.tenant_window_start_s);
    std::fprintf(stderr, "tenant window: %.0f s to the last arrival, %.1f h\n", ours.tenant_window_start_s, last / 3600);
  }
  if (!one_class.empty())
    for (auto& j : trace) {
      j.document["ext_ml_priority_class"] = one_class;
      j.req = ojs::ml::parse_requirements(j.document);
    }
  perturb_declared_durations(trace, declared_noise, seed);
  SimOptions fifo = ours;
  fifo.policy = Policy::fifo_first_fit;
  fifo.preemption = false;
  fifo.estimates = false;
  std::vector<SimResult> results;
  try {  // our policy's queue: a redis-server on the simulated clock (broker_queue.cpp) or a reason
    results.push_back(simulate(trace, workers, ours));
    if (backfill) {
      SimOptions with_backfill = ours;
      with_backfill.backfill = true;
      results.push_back(simulate(trace, workers, with_backfill));
    }
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
  results.push_back(simulate(trace, workers, fifo));

  int gpus = 0;
  for (const auto& w : workers) gpus += w.caps.gpu.count;
  long long bad = 0;
  for (const auto& r : results) bad += r.oversubscriptions + r.constraint_violations;
  if (json_output) {
    json out = {{"jobs", jobs}, {"seed", seed}, {"load", load}, {"workers_mix", mix}, {"workers", workers.size()},
                {"gpus", gpus}, {"results", json::array()}};
    for (const auto& r : results) out["results"].push_back(to_json(r));
    std::cout << out.dump(2) << std::endl;
  } else {
    std::printf("trace: %d jobs, seed %llu, offered load %s %.2f (measured %.2f over the %.1f h of arrivals); cluster: %zu workers (%s), %d GPUs\n\n",
                jobs, static_cast<unsigned long long>(seed), pool_load > 0 ? "per pool >=" : "", pool_load > 0 ? pool_load : load,
                results[0].offered_load,
                trace.empty() ? 0.0 : trace.back().arrival_s / 3600, workers.size(), mix.c_str(), gpus);
    print_table(results);
    for (const auto& r : results) {
      std::printf("%s: while jobs arrive, GPUs %.1f%% busy, %.1f%% idle while a job that fits the worker type waits "
                  "(stranded, %.0f GPU-h), %.1f%% idle with no waiting job that fits the worker",
                  r.policy.c_str(), 100 * r.arrival_utilization, 100 * r.arrival_stranded, r.stranded_gpu_hours,
                  100 * (1 - r.arrival_utilization - r.arrival_stranded));
      for (const auto& [t, h] : r.tenant_gpu_hours) std::printf("; tenant %s %.1f GPU-h", t.c_str(), h);
      std::printf("\n");
    }
    for (const auto& r : results) {
      std::printf("%s: 8-GPU jobs %zu, wait p50 %.0f min, p95 %.0f min; %lld backfill reservations; per pool (offered fit/share, busy, stranded):",
                  r.policy.c_str(), r.wait_8gpu_s.count, r.wait_8gpu_s.p50 / 60, r.wait_8gpu_s.p95 / 60, r.backfill_reservations);
      for (const auto& [type, p] : r.pools)
        std::printf(" %s %d GPUs %.2f/%.2f, %.1f%%, %.1f%%;", type.c_str(), p.gpus, p.offered_fit, p.offered_share, 100 * p.utilization,
                    100 * p.stranded);
      std::printf("\n");
    }
    for (const auto& r : results)
      std::printf("%s: %d finished, %lld judgements in %.2f s wall, %lld model loads\n", r.policy.c_str(), r.finished,
                  r.judgements, r.wall_s, r.model_loads);
    for (const auto& r : results) {
      const auto& a = r.estimate;
      if (a.made + a.unknown == 0) continue;
      std::printf("%s: start estimates at arrival: %lld made, %lld unknown; of the %lld that waited >= 60 s: |error| p50 %.1f min "
                  "(%.1f%% of the wait), p95 %.1f min (%.1f%%); within 10/20/50/100%% of the wait: %.1f/%.1f/%.1f/%.1f%%, "
                  "beyond %.1f%%; started before the estimate %.1f%%; by start_at_p90 %.1f%% (start_at_p90 - start_at p50 %.1f min); "
                  "by start_at_p90 of all %lld estimated %.1f%%, of those told one >= 60 s away %.1f%%\n",
                  r.policy.c_str(), a.made, a.unknown, a.measured, a.abs_error_s.p50 / 60, 100 * a.rel_error.p50,
                  a.abs_error_s.p95 / 60, 100 * a.rel_error.p95, 100 * a.rel_buckets.at(0),
                  100 * (a.rel_buckets.at(0) + a.rel_buckets.at(1)), 100 * (a.rel_buckets.at(0) + a.rel_buckets.at(1) + a.rel_buckets.at(2)),
                  100 * (1 - a.rel_buckets.at(4)), 100 * a.rel_buckets.at(4), 100 * a.early, 100 * a.by_late, a.late_width_s.p50 / 60, a.made, 100 * a.by_late_all, 100 * a.by_late_told);
    }
  }
  long long over = 0;
  std::map<std::string, long long> by_resource;
  for (const auto& r : results) {
    over += r.oversubscriptions;
    for (const auto& [resource, n] : r.oversubscribed) by_resource[resource] += n;
  }
  std::cerr << "oversubscriptions: " << over << " (";
  const char* separator = "";
  for (const auto& [resource, n] : by_resource) {
    std::cerr << separator << resource << " " << n;
    separator = ", ";
  }
  std::cerr << ")\n";
  bool unfair = false;
  if (tenant_tolerance > 0) {  // fair share: GPU-time in the window proportional to the weights
    double hours = 0, weights = 0;
    for (const auto& [t, w] : ours.tenant_weights) weights += w;
    for (const auto& [t, h] : results[0].tenant_gpu_hours) hours += h;
    // What no work-conserving order could have given another tenant (its jobs
    // started with no other tenant's work waiting for the worker type): the floor of
    // its share. On a trace where every pool is saturated the floors are ~0 and the
    // bounds are the weight shares; where they are not, a tenant may hold up to its
    // floor, and the others down to what the floors leave them.
    const auto& forced = results[0].tenant_uncontested_gpu_hours;
    std::map<std::string, double> floor;
    double floors = 0;
    for (const auto& [t, w] : ours.tenant_weights) floors += floor[t] = hours > 0 && forced.count(t) ? forced.at(t) / hours : 0.0;
    for (const auto& [t, w] : ours.tenant_weights) {
      const double share = hours > 0 ? results[0].tenant_gpu_hours.count(t) ? results[0].tenant_gpu_hours.at(t) / hours : 0 : 0;
      const double target = w / weights;
      const double high = std::max(target, floor[t]), low = std::min(target, 1 - (floors - floor[t]));
      std::fprintf(stderr, "tenant %s: %.3f of the GPU-time, weight share %.3f (%.3f started with no other tenant's work waiting "
                   "for the worker type; bounds %.3f-%.3f before the tolerance)\n", t.c_str(), share, target, floor[t], low, high);
      if (share > high * (1 + tenant_tolerance) || share < low * (1 - tenant_tolerance)) {
        std::cerr << "UNFAIR: tenant " << t << " off its fair share by more than " << tenant_tolerance * 100 << "%\n";
        unfair = true;
      }
    }
  }
  if (bad > 0) {
    std::cerr << "OVERSUBSCRIBED: " << bad << " capacity or constraint violations\n";
    return 1;
  }
  bool churn = false;  // preemptions are work lost: a bound catches an order that undoes itself
  if (max_preemptions >= 0 && results[0].preemptions > max_preemptions) {
    std::cerr << "CHURN: " << results[0].policy << " preempted " << results[0].preemptions << " times, more than "
              << max_preemptions << "\n";
    churn = true;
  }
  return unfair || churn ? 1 : 0;
}
