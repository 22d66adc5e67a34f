#include "broker/jobs/cohort_diagnosis.hpp"

#include <algorithm>

#include "broker/governance/queue_configs.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker {

using nlohmann::json;

json cohort_diagnosis(JobReads& reads, QueueDirectory& queues, CohortStore& cohorts, const JobRecord& job) {
  // Every listed queue's cohort and budget in one round trip: this job's, and the
  // other members' for the reclaim under way.
  const auto settings = cohorts.read(queues.queues());
  const auto own = std::find_if(settings.begin(), settings.end(), [&](const CohortSettings& s) { return s.queue == job.queue(); });
  if (own == settings.end()) return nullptr;
  const BudgetUse& use = own->budget;
  json out = governance::cohort_json(use);
  if (out.is_null()) return out;
  if (job.state() == "active") {
    const auto borrowed = job.get_int("borrowed_gpus").value_or(0);
    out["may_be_reclaimed"] = borrowed > 0;
    if (borrowed > 0)
      out["message"] = "placed borrowing " + std::to_string(borrowed) + " GPU(s) of cohort " + use.cohort +
                       ": preempted (with its grace period and checkpoint) when a lending queue's own jobs need them";
    return out;
  }
  if (job.state() != "available") return out;
  // The borrowers of the other members being preempted for this cohort.
  const std::string mark = "cohort:" + use.cohort;
  json victims = json::array();
  long long gpus = 0;
  std::int64_t grace_ends = 0;
  for (const auto& member : settings) {
    const auto& queue = member.queue;
    if (queue == job.queue() || member.cohort != use.cohort) continue;
    std::vector<std::pair<std::string, std::string>> ids;
    for (const auto& [id, _] : reads.active_jobs(queue)) ids.emplace_back(queue, id);
    for (const auto& running : reads.get_many(ids)) {
      if (!running || running->get("preempted_for") != mark) continue;
      const auto deadline = running->get_int("preempt_deadline").value_or(0);
      const auto held = running->get_int("charged_gpus").value_or(0);
      gpus += held;
      grace_ends = std::max(grace_ends, deadline);
      victims.push_back({{"job_id", running->id()}, {"queue", queue}, {"gpus", held}, {"grace_ends_at", format_rfc3339(deadline)}});
    }
  }
  if (!victims.empty()) {
    out["reclaim_pending"] = {{"gpus", gpus}, {"jobs", victims}, {"grace_ends_at", format_rfc3339(grace_ends)}};
    out["message"] = "queue " + job.queue() + " lent GPUs of its share to cohort " + use.cohort + "; " + std::to_string(gpus) +
                     " are being reclaimed from their borrowers, free by " + format_rfc3339(grace_ends);
  } else if (use.max_gpus.value_or(0) < use.nominal_gpus.value_or(0)) {
    out["message"] = "queue " + job.queue() + " lends part of its share to cohort " + use.cohort +
                     "; the controller takes it back on its next pass";
  }
  return out;
}

}  // namespace ojs::broker
