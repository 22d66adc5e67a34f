// An estimate and a placement as the API answers them, and the sentence saying what
// an estimate rests on.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "broker/estimate/forecast.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker::estimate {

using nlohmann::json;

const char* to_string(EndSource source) {
  switch (source) {
    case EndSource::progress: return "progress";
    case EndSource::declared: return "declared";
    case EndSource::deadline: return "deadline";
    case EndSource::median: return "median";
    case EndSource::preempted: return "preempted";
    case EndSource::unknown: break;
  }
  return "unknown";
}

std::string rests_on(const Estimate& e) {
  std::vector<std::string> parts;
  auto count = [&](EndSource source) { return e.running_ends.count(source) ? e.running_ends.at(source) : 0; };
  auto plural = [](int n, const std::string& one, const std::string& many) { return std::to_string(n) + " " + (n == 1 ? one : many); };
  if (int n = count(EndSource::progress)) parts.push_back(plural(n, "running job's reported progress", "running jobs' reported progress"));
  if (int n = count(EndSource::declared)) parts.push_back(plural(n, "running job's declared end", "running jobs' declared ends"));
  if (int n = count(EndSource::deadline)) parts.push_back(plural(n, "running job's execution deadline", "running jobs' execution deadlines"));
  if (int n = count(EndSource::median))
    parts.push_back(plural(n, "running job's learned run time (its type's median)", "running jobs' learned run times (their type's median)"));
  if (!e.preempts.empty())
    parts.push_back("the preemption of " + plural(static_cast<int>(e.preempts.size()), "lower-class running job", "lower-class running jobs") +
                    " for it (it starts once their grace period ends)");
  else if (int n = count(EndSource::preempted))
    parts.push_back(plural(n, "running job preempted for another job", "running jobs preempted for other jobs"));
  parts.push_back(plural(e.jobs_ahead, "job ahead", "jobs ahead"));
  if (e.gang_max_size > e.gang_start_size)  // an elastic gang starts small: say which size the start is for
    parts.push_back("its gang starting with " + plural(e.gang_start_size, "member", "members") + " (min_size; it may grow to " +
                    std::to_string(e.gang_max_size) + " once it runs)");
  for (const auto& k : e.kept_by) {
    if (k == "max_total_gpus" || k == "max_concurrent_gpu_jobs" || k == "max_total_tpu_chips") parts.push_back("the queue budget (" + k + ")");
    else if (k == "tenant_quota") parts.push_back("the tenant's GPU quota");
    else if (k == "gang_forming") parts.push_back("a forming gang holding workers");
    else if (k == "locality_hold") parts.push_back("the locality delay (it waits for a worker with its model)");
  }
  if (e.truncated) parts.push_back("only the first jobs of the queue were read");
  std::string text;
  for (const auto& p : parts) text += (text.empty() ? "" : "; ") + p;
  return text;
}

json to_json(const Estimate& e, std::int64_t now_ms) {
  json j;
  switch (e.status) {
    case Estimate::Status::estimated: j["status"] = "estimated"; break;
    case Estimate::Status::unresolvable: j["status"] = "unresolvable"; break;
    case Estimate::Status::unknown: j["status"] = "unknown"; break;
  }
  j["position"] = e.position;
  j["jobs_ahead"] = e.jobs_ahead;
  if (e.status == Estimate::Status::estimated) {
    j["start_at"] = format_rfc3339(e.start_ms);
    j["start_in_s"] = std::max<std::int64_t>(0, (e.start_ms - now_ms + 999) / 1000);
    if (e.late_start_ms) j["start_at_p90"] = format_rfc3339(*e.late_start_ms);
    j["worker_ids"] = e.worker_ids;
    j["placed_ahead"] = e.placed_ahead;
    json ends = json::object();
    for (auto source : {EndSource::progress, EndSource::declared, EndSource::deadline, EndSource::median, EndSource::preempted})
      ends[to_string(source)] = e.running_ends.count(source) ? e.running_ends.at(source) : 0;
    j["running_ends"] = ends;
    j["rests_on"] = rests_on(e);
    if (!e.preempts.empty()) j["preempts"] = e.preempts;
  } else {
    j["reason"] = e.reason;
  }
  if (e.gang_start_size > 0)
    j["gang"] = {{"start_size", e.gang_start_size}, {"max_size", e.gang_max_size}, {"elastic", e.gang_max_size > e.gang_start_size}};
  j["kept_by"] = e.kept_by;
  if (e.truncated) j["truncated"] = true;
  return j;
}

json to_json(const Placement& p) {
  json j = {{"job_id", p.job_id}, {"worker_ids", p.worker_ids}, {"start_at", format_rfc3339(p.start_ms)}};
  if (p.late_start_ms) j["start_at_p90"] = format_rfc3339(*p.late_start_ms);
  if (!p.tenant.empty()) j["tenant"] = p.tenant;
  j["end_at"] = p.end_ms ? json(format_rfc3339(*p.end_ms)) : json(nullptr);
  return j;
}

}  // namespace ojs::broker::estimate
