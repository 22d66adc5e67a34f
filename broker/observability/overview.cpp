#include "broker/observability/overview.hpp"
#include "broker/governance/queue_configs.hpp"
#include "broker/workers/liveness.hpp"

#include "ojs/core/time.hpp"
#include "ojs/ml/capabilities.hpp"
#include "ojs/ml/device_assignment.hpp"

#include <cmath>
#include <set>

namespace ojs::broker::obs {

using nlohmann::json;

namespace {

std::string gpu_type(const json& caps) {
  if (caps.is_object() && caps.contains("gpu") && caps["gpu"].is_object() && caps["gpu"].contains("type") &&
      caps["gpu"]["type"].is_string())
    return caps["gpu"]["type"].get<std::string>();
  if (caps.is_object() && caps.contains("accelerator") && caps["accelerator"].is_string()) return caps["accelerator"].get<std::string>();
  return "";
}

// Warning XIDs the worker counted on its devices (xid_policy: e.g. 92, 94).
long long xid_warnings(const json& caps) {
  long long n = 0;
  if (caps.is_object() && caps.contains("devices") && caps["devices"].is_array())
    for (const auto& d : caps["devices"])
      if (d.is_object() && d.contains("xid_warnings") && d["xid_warnings"].is_number_integer()) n += d["xid_warnings"].get<long long>();
  return n;
}

// What the worker last read of each device (the agent's `telemetry` per device: NVML
// utilisation, memory in use, temperature, power, ECC), with the device's index.
json gpu_telemetry(const json& caps) {
  json out = json::array();
  if (!caps.is_object() || !caps.contains("devices") || !caps["devices"].is_array()) return out;
  for (const auto& d : caps["devices"]) {
    if (!d.is_object() || !d.contains("telemetry") || !d["telemetry"].is_object() || !d.contains("index")) continue;
    json entry = d["telemetry"];
    entry["gpu"] = d["index"];
    if (d.contains("uuid") && d["uuid"].is_string()) entry["uuid"] = d["uuid"];
    out.push_back(std::move(entry));
  }
  return out;
}

json workers_overview(const OverviewSources& ctx, json& totals) {
  const auto now = now_ms();
  json list = json::array();
  long long live = 0, advertised = 0, in_use = 0, unhealthy = 0, warnings = 0;
  for (const auto& w : ctx.workers.list()) {
    const bool is_live = !worker_lost(w, now, ctx.config.worker_dead_after_ms);
    const int total = advertised_gpus(w.capabilities);
    int busy = 0;
    for (const auto& job : ctx.workers.load(w.id).active) busy += job.gpus;
    const json sick = ml::unhealthy_devices(w.capabilities);
    list.push_back({{"id", w.id},
                    {"state", w.state},
                    {"live", is_live},
                    {"last_seen", w.last_seen_ms > 0 ? json(format_rfc3339(w.last_seen_ms)) : json(nullptr)},
                    {"last_seen_age_s", w.last_seen_ms > 0 ? (now - w.last_seen_ms) / 1000.0 : -1.0},
                    {"gpu_type", gpu_type(w.capabilities)},
                    {"gpus_total", total},
                    {"gpus_in_use", busy},
                    {"gpus_free", std::max(0, total - busy - out_of_service_gpus(w.capabilities, w.drained_devices))},
                    {"queues", w.queues},
                    {"unhealthy_devices", sick},
                    {"drained_devices", w.drained_devices},
                    {"gpu_telemetry", gpu_telemetry(w.capabilities)}});
    if (!is_live) continue;
    ++live;
    advertised += total;
    in_use += busy;
    unhealthy += static_cast<long long>(sick.size());
    warnings += xid_warnings(w.capabilities);
  }
  totals["workers"] = list.size();
  totals["workers_live"] = live;
  totals["gpus_advertised"] = advertised;
  totals["gpus_in_use"] = in_use;
  totals["gpus_unhealthy"] = unhealthy;
  totals["gpu_xid_warnings"] = warnings;
  return list;
}

json queue_overview(const OverviewSources& ctx, const std::string& name) {
  json q = {{"name", name}, {"paused", ctx.queues.is_paused(name)}};
  const auto stored_counts = ctx.queues.queue_counts(name);
  json counts = json::object();
  for (const auto& [k, v] : stored_counts) counts[k] = v;
  q["counts"] = counts;
  // Budget use: the ledger the claim script charges and the limits it enforces
  // (the store's one budget read), and the preemption counter the preemption
  // controller keeps in the stats hash (read with the counts).
  const BudgetUse use = ctx.queues.budget(name);
  q["gpus_in_use"] = use.gpus_in_use;
  q["gpu_jobs_running"] = use.gpu_jobs;
  q["gpu_memory_gb_in_use"] = ml::gpu_memory_gb(use.gpu_mem_mb_in_use);
  q["budget"] = governance::budget_limits_json(use);
  if (auto cohort = governance::cohort_json(use); !cohort.is_null()) q["cohort"] = std::move(cohort);
  const auto preempted = stored_counts.find("preempted");
  q["preemptions"] = preempted == stored_counts.end() ? 0 : preempted->second;
  auto running = ctx.views.running(name);
  q["checkpoints_overdue"] = running.checkpoints_overdue;
  q["elastic_gangs"] = std::move(running.elastic_gangs);
  json classes = json::array();
  const json diagnosis = ctx.views.queue_diagnosis(name);
  for (const auto& c : diagnosis["classes"]) {
    json entry = {{"class", c.value("class", "")},
                  {"waiting", c.value("waiting", 0)},
                  {"requirements", c.contains("requirements") ? c["requirements"] : json::object()},
                  {"workers_seen", c.value("workers_seen", 0)},
                  {"eligible", c.value("eligible", 0)},
                  {"message", c.value("message", "")}};
    classes.push_back(std::move(entry));
  }
  q["classes"] = classes;
  return q;
}

}  // namespace

int advertised_gpus(const json& caps) {
  if (!caps.is_object()) return 0;
  if (caps.contains("gpu") && caps["gpu"].is_object() && caps["gpu"].contains("count") && caps["gpu"]["count"].is_number_integer())
    return caps["gpu"]["count"].get<int>();
  if (caps.contains("devices") && caps["devices"].is_array()) return static_cast<int>(caps["devices"].size());
  return 0;
}

int out_of_service_gpus(const json& caps, const std::vector<int>& drained) {
  std::set<int> out(drained.begin(), drained.end());
  for (const auto& d : ml::unhealthy_devices(caps)) out.insert(d["index"].get<int>());
  return static_cast<int>(out.size());
}

json build_overview(const OverviewSources& ctx) {
  json totals = json::object();
  json workers = workers_overview(ctx, totals);
  json queues = json::array();
  for (const auto& name : ctx.queues.queues()) queues.push_back(queue_overview(ctx, name));
  return {{"generated_at", format_rfc3339(now_ms())}, {"totals", totals}, {"workers", workers}, {"queues", queues}};
}

void render_cluster_metrics(const json& overview, Exposition& out) {
  const auto& queues = overview["queues"];
  auto per_queue = [&](const char* name, const char* type, const char* help, auto&& each) {
    out.family(name, type, help);
    for (const auto& q : queues) each(q, q["name"].get<std::string>());
  };
  per_queue("ojs_queue_jobs", "gauge", "Jobs in a queue now, by state (available, active, delayed, dead_letter)",
            [&](const json& q, const std::string& name) {
              for (const char* state : {"available", "active", "delayed", "dead_letter"})
                out.sample("ojs_queue_jobs", {{"queue", name}, {"state", state}}, q["counts"].value(state, 0.0));
            });
  per_queue("ojs_queue_finished_total", "counter", "Jobs that reached a terminal state, by state (completed, discarded, cancelled)",
            [&](const json& q, const std::string& name) {
              for (const char* state : {"completed", "discarded", "cancelled"})
                out.sample("ojs_queue_finished_total", {{"queue", name}, {"state", state}}, q["counts"].value(state, 0.0));
            });
  per_queue("ojs_queue_paused", "gauge", "1 while the queue is paused", [&](const json& q, const std::string& name) {
    out.sample("ojs_queue_paused", {{"queue", name}}, q["paused"].get<bool>() ? 1 : 0);
  });
  per_queue("ojs_class_waiting", "gauge", "Available jobs per requirement class (jobs with identical hard constraints)",
            [&](const json& q, const std::string& name) {
              for (const auto& c : q["classes"])
                out.sample("ojs_class_waiting", {{"queue", name}, {"class", c["class"].get<std::string>()}}, c["waiting"].get<double>());
            });
  per_queue("ojs_queue_gpus_in_use", "gauge", "GPUs charged to the queue's budget ledger by running jobs",
            [&](const json& q, const std::string& name) { out.sample("ojs_queue_gpus_in_use", {{"queue", name}}, q["gpus_in_use"].get<double>()); });
  per_queue("ojs_queue_gpu_jobs_running", "gauge", "Running GPU jobs charged to the queue's budget ledger",
            [&](const json& q, const std::string& name) {
              out.sample("ojs_queue_gpu_jobs_running", {{"queue", name}}, q["gpu_jobs_running"].get<double>());
            });
  per_queue("ojs_queue_gpu_memory_gb_in_use", "gauge", "GPU memory (GB) charged to the queue's budget ledger by running jobs",
            [&](const json& q, const std::string& name) {
              out.sample("ojs_queue_gpu_memory_gb_in_use", {{"queue", name}}, q["gpu_memory_gb_in_use"].get<double>());
            });
  per_queue("ojs_queue_gpu_budget", "gauge",
            "Configured GPU budget of the queue, by limit (max_total_gpus, max_concurrent_gpu_jobs, max_total_gpu_memory_gb)",
            [&](const json& q, const std::string& name) {
              for (const auto& [limit, value] : q["budget"].items())
                out.sample("ojs_queue_gpu_budget", {{"queue", name}, {"limit", limit}}, value.get<double>());
            });
  per_queue("ojs_queue_gpus", "gauge",
            "A cohort member's GPUs by kind: nominal (max_total_gpus), share (what it may hold now), lent (of its nominal, to "
            "others), borrowed (held above its nominal, by jobs placed borrowing)",
            [&](const json& q, const std::string& name) {
              if (!q.contains("cohort")) return;
              const auto& c = q["cohort"];
              for (const char* kind : {"nominal", "share", "lent", "borrowed"})
                out.sample("ojs_queue_gpus", {{"queue", name}, {"cohort", c["name"].get<std::string>()}, {"kind", kind}},
                           c[std::string(kind) + "_gpus"].get<double>());
            });
  per_queue("ojs_queue_checkpoints_overdue", "gauge",
            "Running jobs with ext_ml_checkpoint_enabled that committed no checkpoint for over twice their interval",
            [&](const json& q, const std::string& name) {
              out.sample("ojs_queue_checkpoints_overdue", {{"queue", name}}, q["checkpoints_overdue"].get<double>());
            });
  per_queue("ojs_preemptions_total", "counter", "Jobs preempted in the queue (stats hash field 'preempted')",
            [&](const json& q, const std::string& name) { out.sample("ojs_preemptions_total", {{"queue", name}}, q["preemptions"].get<double>()); });

  std::map<std::string, long long> by_state = {{"running", 0}, {"quiet", 0}, {"terminate", 0}, {"drain", 0}, {"lost", 0}};
  for (const auto& w : overview["workers"]) ++by_state[w["live"].get<bool>() ? w["state"].get<std::string>() : std::string("lost")];
  out.family("ojs_workers", "gauge", "Workers seen, by state (running, quiet, terminate, drain; lost = silent past --worker-dead-after-ms)");
  for (const auto& [state, n] : by_state) out.sample("ojs_workers", {{"state", state}}, static_cast<double>(n));
  const auto& totals = overview["totals"];
  out.family("ojs_gpus_advertised", "gauge", "GPUs advertised by live workers");
  out.sample("ojs_gpus_advertised", {}, totals["gpus_advertised"].get<double>());
  out.family("ojs_gpus_in_use", "gauge", "GPUs of live workers held by running jobs");
  out.sample("ojs_gpus_in_use", {}, totals["gpus_in_use"].get<double>());
  out.family("ojs_gpus_unhealthy", "gauge", "GPU devices of live workers out of service after a fatal XID (unhealthy)");
  out.sample("ojs_gpus_unhealthy", {}, totals["gpus_unhealthy"].get<double>());
  // Per device of each live worker, under the DCGM exporter's names (the worker's NVML
  // reading, at most telemetry_interval_s old when it heartbeats).
  struct DcgmField {
    const char* name;
    const char* key;
    double scale;
    const char* help;
  };
  for (const DcgmField f : {DcgmField{"DCGM_FI_DEV_GPU_UTIL", "utilization_pct", 1, "GPU utilization (%)"},
                            DcgmField{"DCGM_FI_DEV_FB_USED", "memory_used_gb", 1e9 / (1024.0 * 1024.0), "Framebuffer memory used (MiB)"},
                            DcgmField{"DCGM_FI_DEV_GPU_TEMP", "temperature_c", 1, "GPU temperature (C)"},
                            DcgmField{"DCGM_FI_DEV_POWER_USAGE", "power_w", 1, "Power draw (W)"},
                            DcgmField{"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "ecc_uncorrected", 1,
                                      "Uncorrected (double-bit) volatile ECC errors"}}) {
    out.family(f.name, "gauge", std::string(f.help) + ", per device of live workers, as the worker last read it from NVML");
    for (const auto& w : overview["workers"]) {
      if (!w["live"].get<bool>() || !w.contains("gpu_telemetry")) continue;
      for (const auto& t : w["gpu_telemetry"])
        if (t.contains(f.key) && t[f.key].is_number())
          out.sample(f.name, {{"worker", w["id"].get<std::string>()}, {"gpu", std::to_string(t["gpu"].get<int>())}},
                     std::round(t[f.key].get<double>() * f.scale * 1000) / 1000);
    }
  }
  out.family("ojs_gpu_xid_warnings", "gauge", "Warning XIDs (e.g. 92, 94) live workers counted on their devices since they started");
  out.sample("ojs_gpu_xid_warnings", {}, totals["gpu_xid_warnings"].get<double>());
}

}  // namespace ojs::broker::obs
