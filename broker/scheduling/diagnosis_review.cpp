#include "broker/scheduling/diagnosis_review.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <optional>

#include "broker/scheduling/capacity_hold.hpp"
#include "broker/scheduling/liveness_filter.hpp"
#include "broker/scheduling/locality_hold_filter.hpp"
#include "broker/scheduling/preemption_pending_filter.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker {

using nlohmann::json;

json DiagnosisReview::summary(const std::string& queue, const std::string& class_id, const JobRecord* job,
                              const std::vector<std::string>& leave_out) {
  const auto now = now_ms();
  auto records = log_.recent(queue, class_id);
  std::erase_if(records, [&](const ml::WorkerJudgement& r) {
    return std::find(leave_out.begin(), leave_out.end(), r.worker_id) != leave_out.end();
  });

  // preemption_pending: a preemption hold for this job (or, for the class, its waiting head).
  std::optional<CapacityHold> pending;
  for (const auto& [holder, text] : marks_.holds()) {
    auto h = CapacityHold::parse(holder, text);
    if (!h || h->backfill_start_ms != 0 || h->until_ms <= now) continue;
    if (job ? h->for_job == job->id() : h->queue == queue && h->class_id == class_id) {
      pending = std::move(h);
      break;
    }
  }
  std::optional<ml::Refusal> pending_refusal;
  std::vector<std::string> victims;
  if (pending) {
    for (const auto& v : pending->victims) victims.push_back(v.job_id);
    pending_refusal = preemption_pending_refusal(pending->for_job, victims, pending->until_ms);
    const bool recorded = std::any_of(records.begin(), records.end(), [&](const ml::WorkerJudgement& r) { return r.worker_id == pending->worker_id; });
    if (!recorded) records.push_back({pending->worker_id, {}});
  }

  const std::int64_t enqueued = job ? job->get_int("enqueued_at").value_or(0) : 0;
  std::map<std::string, std::optional<WorkerInfo>> workers;  // each worker read once
  for (auto& rec : records) {
    auto& j = rec.judgement;
    auto it = workers.find(rec.worker_id);
    if (it == workers.end()) it = workers.emplace(rec.worker_id, workers_.get(rec.worker_id)).first;
    if (auto r = liveness_refusal(it->second, now, dead_after_ms_)) j.refusals.insert(j.refusals.begin(), std::move(*r));
    for (auto& hold : j.holds)
      if (hold_applies(hold, enqueued, now)) j.refusals.push_back(hold);
    j.holds.clear();
    const bool noted = std::any_of(j.refusals.begin(), j.refusals.end(), [](const ml::Refusal& r) { return r.code == ml::VerdictCode::preemptible; });
    if (pending_refusal && rec.worker_id == pending->worker_id && !noted) j.refusals.push_back(*pending_refusal);  // FETCH may have noted it
  }

  json s = ml::diagnose(records);
  s["class"] = class_id;
  if (records.empty()) s["message"] = "no worker has polled this queue in the last " + std::to_string(log_.window_ms() / 1000) + " s";
  if (pending)
    s["preemption"] = {{"worker_id", pending->worker_id}, {"for_job", pending->for_job},
                       {"victims", victims}, {"hold_until", format_rfc3339(pending->until_ms)}};
  return s;
}

}  // namespace ojs::broker
