// What the cluster looks like now, read from Redis at request time (so it is
// exact across any number of brokers sharing one Redis): workers with their
// GPUs, queues with depth by state, GPU budgets and why each class waits.
// GET /ojs/v1/admin/overview returns it, /ojs/status renders it as HTML and
// /metrics turns it into gauges.
#pragma once
#include <nlohmann/json.hpp>

#include <string>

#include "broker/config.hpp"
#include "broker/jobs/job_views.hpp"
#include "broker/store/queue_directory.hpp"
#include "broker/store/redis_health.hpp"
#include "broker/store/usage_store.hpp"
#include "broker/observability/metrics.hpp"

namespace ojs::broker::obs {

// {generated_at, totals{workers, workers_live, gpus_advertised, gpus_in_use},
//  workers[{id, state, live, last_seen, last_seen_age_s, gpu_type, gpus_total, gpus_in_use, gpus_free, queues,
//           unhealthy_devices[{index, uuid, mig_profile?, reason}]}],
//  queues[{name, paused, counts{available, active, delayed, dead_letter, completed, discarded, cancelled},
//          gpus_in_use, gpu_jobs_running, gpu_memory_gb_in_use, budget{max_total_gpus?, max_concurrent_gpu_jobs?,
//          max_total_gpu_memory_gb?}, preemptions, checkpoints_overdue,
//          elastic_gangs[{job_id, type, min_size, max_size, elastic, size, generation}] (running ones),
//          classes[{class, waiting, requirements, workers_seen, eligible, message}]}]}
// What the overview reads (the API passes its own context's parts).
struct OverviewSources {
  const BrokerConfig& config;
  JobViews& views;         // each queue's diagnosis
  QueueDirectory& queues;  // counts, pause, budget
  WorkerRegistry& workers;
  RedisHealth& health;     // /health
  UsageStore& usage;       // metrics
};
nlohmann::json build_overview(const OverviewSources& ctx);

// GPUs a worker advertises: gpu.count, else the length of its device list.
int advertised_gpus(const nlohmann::json& capabilities);
// Of those, the devices out of service: unhealthy (an XID) or drained by an admin.
// No free count includes them (gpus_free = advertised - in use - out of service).
int out_of_service_gpus(const nlohmann::json& capabilities, const std::vector<int>& drained);

// The cluster gauges of an overview in Prometheus text format.
void render_cluster_metrics(const nlohmann::json& overview, Exposition& out);

// Which workers the status page lists: all, live or lost (silent past
// --worker-dead-after-ms), a page of per_page at a time (links, no scripts).
struct StatusPageView {
  std::string workers = "all";
  int page = 1;
  int per_page = 50;
};

// The read-only HTML status page (inline CSS, no scripts, refreshes itself).
std::string render_status_page(const nlohmann::json& overview, const StatusPageView& view = {});

}  // namespace ojs::broker::obs
