#include "broker/jobs/job_views.hpp"

#include <algorithm>

#include "broker/jobs/checkpoint_lag.hpp"
#include "broker/jobs/cohort_diagnosis.hpp"
#include "broker/jobs/gang_view.hpp"

#include "broker/jobs/job_service.hpp"
#include "broker/preemption/backfill.hpp"
#include "broker/preemption/preemption.hpp"
#include "broker/preemption/running_jobs.hpp"
#include "ojs/core/job_states.hpp"
#include "ojs/core/time.hpp"
#include "ojs/ml/requirement_class.hpp"

namespace ojs::broker {

using nlohmann::json;

std::optional<std::string> JobViews::tenant_of(const std::string& id) {
  auto record = reads_.get(id);
  if (!record) return std::nullopt;
  return record->get("tenant");
}

DiagnosisReview JobViews::review() {
  return DiagnosisReview(diagnosis_, workers_, marks_, config_.worker_dead_after_ms);
}

json JobViews::info(const std::string& id) {
  auto record = reads_.get(id);
  if (!record) throw job_not_found(id);
  json envelope = record->envelope();
  if (waits_for_worker(record->state()) && record->get("class") != ml::kDefaultClassId) envelope["diagnosis"] = review().summary(record->queue(), record->get("class"), &*record);
  return envelope;
}

json JobViews::diagnosis(const std::string& id) {
  auto record = reads_.get(id);
  if (!record) throw job_not_found(id);
  const auto gang = gang_sizes(*record);
  const bool running = record->state() == "active";
  // A running gang's own members cannot join it: their verdicts say nothing of its growth.
  const std::vector<std::string> members = gang && running ? gang->workers : std::vector<std::string>{};
  json out = review().summary(record->queue(), record->get("class"), &*record, members);
  const json class_summary = out;  // a running gang's growth reads it after the message below replaces it
  out["job_id"] = id;
  out["state"] = record->state();
  out["queue"] = record->queue();
  if (record->state() == "pending" && record->has("held_by")) {  // an operator holds it: nothing else matters
    out["held_by"] = record->get("held_by");
    out["message"] = "held by " + record->get("held_by") + ": no worker takes it until it is released (POST /ojs/v1/jobs/" + id + "/release)";
  } else if (!waits_for_worker(record->state())) {  // running or finished: the class's verdict is about others
    out.erase("code");
    out.erase("by_code");
    std::string where;
    if (record->state() == "active" && record->has("worker_id")) where = " on worker " + record->get("worker_id");
    out["message"] = "not waiting: " + record->state() + where + "; the refusals are its class's, for its jobs still waiting";
    if (const auto lag = checkpoint_lag(*record, now_ms())) {
      out["checkpoint"] = {{"interval_s", lag->interval_s}, {"since", format_rfc3339(lag->since_ms)}, {"overdue", lag->overdue}};
      if (lag->overdue) {
        out["checkpoint"]["overdue_by_s"] = lag->overdue_by_ms / 1000;
        out["message"] = out["message"].get<std::string>() + "; its checkpoint is overdue: none since " + format_rfc3339(lag->since_ms) +
                         " (every " + std::to_string(lag->interval_s) + " s expected): preempted now, it would lose that work";
      }
    }
  }
  if (gang && (waits_for_worker(record->state()) || running)) {
    const bool may_grow = running && gang->elastic() && gang->size < gang->max_size;
    out["gang"] = gang_diagnosis(*gang, running, class_summary,
                                 may_grow ? growth_next(record->queue(), record->get("class"), members) : std::nullopt);
    if (running) out["message"] = out["message"].get<std::string>() + "; " + out["gang"]["message"].get<std::string>();
  }
  out["requirements"] = json::parse(queues_.class_json(record->queue(), record->get("class")), nullptr, false);
  if (auto cohort = cohort_diagnosis(reads_, queues_, cohorts_, *record); !cohort.is_null()) out["cohort"] = std::move(cohort);
  if (record->state() == "available") {  // a backfill reservation: the worker held for it, and from when
    if (auto hold = backfill_hold_of(marks_, id))
      out["backfill_reservation"] = {{"worker_id", hold->worker_id}, {"start_at", format_rfc3339(hold->backfill_start_ms)},
                                     {"until", format_rfc3339(hold->until_ms)}, {"gpus", hold->gpus}};
  }
  return out;
}

std::optional<GrowthNext> JobViews::growth_next(const std::string& queue, const std::string& class_id,
                                                const std::vector<std::string>& members) {
  constexpr std::size_t kMaxWorkers = 32;  // busy workers whose jobs are read (a diagnosis is an expensive read)
  const auto now = now_ms();
  std::optional<GrowthNext> next;
  std::size_t read = 0;
  for (const auto& seen : diagnosis_.recent(queue, class_id)) {
    if (std::find(members.begin(), members.end(), seen.worker_id) != members.end()) continue;
    if (seen.judgement.code() != ml::VerdictCode::wait) continue;  // busy, not unfit
    if (++read > kMaxWorkers) break;
    for (const auto& [running, record] : running_records_on(reads_, workers_, seen.worker_id, now))
      if (running.declared_end_ms && (!next || *running.declared_end_ms < next->at_ms))
        next = GrowthNext{seen.worker_id, running.job_id, *running.declared_end_ms};
  }
  return next;
}

JobViews::RunningView JobViews::running(const std::string& queue) {
  std::vector<std::pair<std::string, std::string>> ids;
  for (const auto& [id, worker] : reads_.active_jobs(queue)) ids.emplace_back(queue, id);
  const auto now = now_ms();
  RunningView out;
  for (const auto& job : reads_.get_many(ids)) {
    if (!job) continue;
    if (const auto lag = checkpoint_lag(*job, now); lag && lag->overdue) ++out.checkpoints_overdue;
    if (const auto gang = gang_sizes(*job); gang && gang->elastic() && job->state() == "active") {
      json entry = gang_sizes_json(*gang);
      entry["job_id"] = job->id();
      entry["type"] = job->get("type");
      out.elastic_gangs.push_back(std::move(entry));
    }
  }
  return out;
}

json JobViews::queue_diagnosis(const std::string& queue) {
  const auto classes = queues_.load_classes(queue);
  const auto waiting = queues_.ready_counts(queue, classes);
  json list = json::array();
  auto reviewed = review();
  for (const auto& [id, canonical] : classes.classes) {
    json entry = reviewed.summary(queue, id);
    entry["waiting"] = waiting.count(id) ? waiting.at(id) : 0;
    entry["requirements"] = json::parse(canonical, nullptr, false);
    list.push_back(std::move(entry));
  }
  return {{"queue", queue}, {"classes", list}};
}

}  // namespace ojs::broker
