#include "render.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <sstream>

namespace ojsctl {

using nlohmann::json;

namespace {

std::string text(const json& v) {
  if (v.is_null()) return "-";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

std::string field(const json& object, const char* name) {
  return object.is_object() && object.contains(name) ? text(object[name]) : std::string("-");
}

}  // namespace

std::string table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width(header.size());
  for (std::size_t c = 0; c < header.size(); ++c) width[c] = header[c].size();
  for (const auto& row : rows)
    for (std::size_t c = 0; c < row.size() && c < width.size(); ++c) width[c] = std::max(width[c], row[c].size());
  std::ostringstream out;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      s += cells[c];
      if (c + 1 < cells.size()) s += std::string(width[c] - cells[c].size() + 2, ' ');
    }
    out << s << "\n";
  };
  line(header);
  for (const auto& row : rows) line(row);
  return out.str();
}

std::string render_why(const json& d, const json* budget) {
  std::ostringstream out;
  out << "Job:          " << field(d, "job_id") << "\n";
  out << "Queue:        " << field(d, "queue") << "\n";
  out << "State:        " << field(d, "state") << "\n";
  out << "Requirements:";
  if (d.contains("requirements") && d["requirements"].is_object() && !d["requirements"].empty()) {
    out << "\n";
    for (const auto& [k, v] : d["requirements"].items()) out << "  " << k << ": " << text(v) << "\n";
  } else {
    out << " none (any worker)\n";
  }
  out << "Workers seen: " << field(d, "workers_seen") << " (eligible: " << field(d, "eligible") << ")\n";
  out << "Summary:      " << field(d, "message") << "\n";
  if (d.contains("code") && d["code"].is_string()) {  // the fleet's verdict (docs/http-api.md, diagnosis)
    const std::string code = d["code"].get<std::string>();
    const char* meaning = code == "ok"             ? "a worker may take it now"
                          : code == "wait"         ? "busy now: it fits a worker once work there ends"
                          : code == "unresolvable" ? "no worker seen could ever take it"
                          : code == "preemptible"  ? "lower-class work is being preempted for it"
                          : code == "held"         ? "held back on purpose for a while"
                                                   : "";
    out << "Verdict:      " << code << (*meaning ? std::string(" (") + meaning + ")" : std::string()) << "\n";
  }
  if (d.contains("gang") && d["gang"].is_object()) {  // a gang's sizes: docs/http-api.md, the diagnosis
    const auto& g = d["gang"];
    out << "Gang:         " << field(g, "size") << " members now, target " << field(g, "min_size") << " to " << field(g, "max_size")
        << (g.value("elastic", false) ? " (elastic)" : "") << ", generation " << field(g, "generation") << "\n";
    out << "              " << field(g, "message") << "\n";
  }
  if (d.contains("estimate") && d["estimate"].is_object()) {  // its shape: docs/http-api.md, the diagnosis
    const auto& e = d["estimate"];
    const std::string status = field(e, "status");
    out << "Estimate:     ";
    if (status == "estimated") {
      out << "starts " << field(e, "start_at") << " (in " << field(e, "start_in_s") << " s), position " << field(e, "position");
      std::string workers;
      for (const auto& w : e.value("worker_ids", json::array())) workers += (workers.empty() ? "" : ",") + text(w);
      if (!workers.empty()) out << ", on " << workers;
      out << "; rests on " << field(e, "rests_on") << "\n";
    } else if (status == "started") {
      out << "started " << field(e, "started_at") << "\n";
    } else {
      out << status << (e.contains("reason") ? ": " + field(e, "reason") : std::string()) << "\n";
    }
  }
  if (d.contains("preemption") && d["preemption"].is_object()) {
    const auto& p = d["preemption"];
    std::string victims;
    for (const auto& v : p.value("victims", json::array())) victims += (victims.empty() ? "" : ", ") + text(v);
    out << "Preemption:   " << victims << " on worker " << field(p, "worker_id") << ", GPUs held until " << field(p, "hold_until") << "\n";
  }
  if (d.contains("by_predicate") && d["by_predicate"].is_object() && !d["by_predicate"].empty()) {
    std::vector<std::pair<long long, std::string>> order;
    for (const auto& [name, p] : d["by_predicate"].items()) order.emplace_back(-p.value("count", 0LL), name);
    std::sort(order.begin(), order.end());
    std::vector<std::vector<std::string>> rows;
    for (const auto& [negative, name] : order) {
      const auto& p = d["by_predicate"][name];
      rows.push_back({name, field(p, "code"), std::to_string(-negative), field(p, "sample_reason"), field(p, "sample_worker")});
    }
    out << "Refusals:\n" << table({"  PREDICATE", "CODE", "WORKERS", "SAMPLE REASON", "SAMPLE WORKER"}, [&] {
      for (auto& r : rows) r[0] = "  " + r[0];
      return rows;
    }());
  }
  if (budget && budget->is_object()) {
    const auto& limits = (*budget)["limits"];
    const auto& used = (*budget)["in_use"];
    out << "Budget:       " << field(used, "gpus") << "/" << field(limits, "max_total_gpus") << " GPUs, " << field(used, "gpu_jobs")
        << "/" << field(limits, "max_concurrent_gpu_jobs") << " GPU jobs\n";
  }
  return out.str();
}

std::string render_budget(const json& b) {
  std::ostringstream out;
  const auto& limits = b["limits"];
  const auto& used = b["in_use"];
  out << "Queue:     " << field(b, "queue") << "\n";
  out << "GPUs:      " << field(used, "gpus") << " in use / " << field(limits, "max_total_gpus") << " max_total_gpus\n";
  out << "GPU jobs:  " << field(used, "gpu_jobs") << " running / " << field(limits, "max_concurrent_gpu_jobs") << " max_concurrent_gpu_jobs\n";
  if (limits.contains("max_total_tpu_chips"))  // shown where it is set: most queues run no TPU job
    out << "TPU chips: " << field(used, "tpu_chips") << " in use / " << field(limits, "max_total_tpu_chips") << " max_total_tpu_chips\n";
  if (b.contains("cohort")) {
    const auto& c = b["cohort"];
    out << "Cohort:    " << field(c, "name") << ": nominal " << field(c, "nominal_gpus") << ", may hold " << field(c, "share_gpus")
        << " now (lent " << field(c, "lent_gpus") << ", borrowed " << field(c, "borrowed_gpus") << ")\n";
  }
  if (b.contains("tenants") && !b["tenants"].empty()) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& [tenant, t] : b["tenants"].items()) rows.push_back({tenant, field(t, "gpus_in_use"), field(t, "max_gpus")});
    out << "Tenants:\n" << table({"TENANT", "GPUS IN USE", "MAX GPUS"}, rows);
  }
  return out.str();
}

std::string render_reconciliation(const json& r) {
  std::ostringstream out;
  out << "Queue:    " << field(r, "queue") << "\n";
  out << "Ledger:   " << field(r["ledger"], "gpus") << " GPUs, " << field(r["ledger"], "gpu_jobs") << " GPU jobs\n";
  out << "Active:   " << field(r["active"], "gpus") << " GPUs, " << field(r["active"], "gpu_jobs") << " GPU jobs\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& t : r.value("tenants", json::array()))
    rows.push_back({field(t, "tenant"), field(t, "ledger_gpus"), field(t, "active_gpus")});
  if (!rows.empty()) out << table({"TENANT", "LEDGER GPUS", "ACTIVE GPUS"}, rows);
  const bool consistent = r.value("consistent", false);
  out << "Result:   " << (consistent ? "consistent" : "DRIFT (gpus " + field(r["drift"], "gpus") + ", gpu_jobs " + field(r["drift"], "gpu_jobs") + ")");
  if (r.value("repaired", false)) out << "; ledger repaired";
  out << "\n";
  return out.str();
}

std::string render_workers(const json& workers) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& w : workers) {
    const auto& caps = w.contains("capabilities") && w["capabilities"].is_object() ? w["capabilities"] : json::object();
    const auto gpu = caps.contains("gpu") && caps["gpu"].is_object() ? caps["gpu"] : json::object();
    rows.push_back({field(w, "id"), field(w, "state"), field(w, "last_seen"), field(gpu, "type"), field(w, "gpus_total"),
                    field(w, "gpus_free"), field(w, "active_jobs")});
  }
  return table({"ID", "STATE", "LAST SEEN", "GPU TYPE", "GPUS", "FREE", "ACTIVE JOBS"}, rows);
}

std::string render_jobs(const json& listing) {
  std::vector<std::vector<std::string>> rows;
  // `items` of GET /admin/jobs and /dead-letter, `jobs` of the per-queue listing
  for (const auto& j : listing.value("items", listing.value("jobs", json::array())))
    rows.push_back({field(j, "id"), field(j, "queue"), field(j, "type"), field(j, "state"), field(j, "attempt"),
                    field(j, "priority"), field(j, "gpus"), field(j, "tenant"), field(j, "worker_id")});
  return table({"ID", "QUEUE", "TYPE", "STATE", "ATTEMPT", "PRIORITY", "GPUS", "TENANT", "WORKER"}, rows);
}

// One row per tenant (queue, type, worker), resource-hours: easier to read than seconds.
std::string render_usage(const json& usage) {
  const std::string by = usage.value("by", "tenant");
  std::vector<std::vector<std::string>> rows;
  const auto hours = [](const json& row, const char* name) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", row.value(name, 0.0) / 3600);
    return std::string(buf);
  };
  for (const auto& r : usage.value("rows", json::array())) {
    const auto key = r.value(by, "");
    rows.push_back({key.empty() ? "(none)" : key, hours(r, "gpu_seconds"), hours(r, "cpu_seconds"), hours(r, "memory_gb_seconds"),
                    hours(r, "gpu_memory_gb_seconds")});
  }
  std::string upper = by;
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return "from " + usage.value("from", "") + " to " + usage.value("to", "") + "\n" +
         table({upper, "GPU-HOURS", "CPU-HOURS", "MEMORY-GB-HOURS", "GPU-MEMORY-GB-HOURS"}, rows);
}

std::string render_job(const json& job) {
  return table({"ID", "QUEUE", "TYPE", "STATE", "ATTEMPT", "PRIORITY", "HELD BY"},
               {{field(job, "id"), field(job, "queue"), field(job, "type"), field(job, "state"), field(job, "attempt"),
                 field(job, "priority"), field(job, "held_by")}});
}

}  // namespace ojsctl
