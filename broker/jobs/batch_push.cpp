#include "broker/jobs/batch_push.hpp"

#include <map>
#include <optional>
#include <set>

#include "broker/preemption/preemption.hpp"
#include "ojs/core/error.hpp"

namespace ojs::broker {

using nlohmann::json;

namespace {

// --max-queues for the batch as a whole: PushService::admit_queue admitted each job's
// queue alone, so five new queues passed one by one where one more would fit.
void admit_new_queues(QueueDirectory& store, const std::vector<PreparedJob>& prepared, int max_queues) {
  if (max_queues <= 0) return;
  std::set<std::string> queues, fresh;
  for (const auto& p : prepared) queues.insert(p.job.queue);
  if (queues.size() < 2) return;  // one queue: admit_queue has checked exactly this
  for (const auto& queue : queues)
    if (!store.queue_exists(queue)) fresh.insert(queue);
  if (fresh.size() < 2) return;
  const auto existing = store.queue_count();
  if (existing + fresh.size() <= static_cast<std::size_t>(max_queues)) return;
  throw OjsError(ErrorCode::validation_error,
                 "broker bound max_queues: " + std::to_string(existing) + " of " + std::to_string(max_queues) + " queues exist; the batch's " +
                     std::to_string(fresh.size()) + " new queues (" + *fresh.begin() + ", ...) would pass it (an admin may delete empty queues)",
                 {{"field", "jobs"}, {"limit", "max_queues"}, {"max", max_queues}});
}

json refusal(std::size_t index, const OjsError& e) {
  return {{"index", index}, {"code", to_string(e.code())}, {"message", e.what()},
          {"details", under_field("jobs[" + std::to_string(index) + "].", e).details()}};
}

}  // namespace

json push_batch(BatchPushSources& s, const json& body, int max_queues) {
  PushService& jobs = s.push;
  if (!body.is_object() || !body.contains("jobs")) throw invalid_field("jobs", "is required");
  const auto& list = body["jobs"];
  if (!list.is_array() || list.empty()) throw invalid_field("jobs", "must be a non-empty array of jobs");
  if (list.size() > kMaxBatchJobs) throw invalid_field("jobs", "must hold at most " + std::to_string(kMaxBatchJobs) + " jobs");

  // Validate every job first: a batch is stored whole or not at all.
  std::vector<PreparedJob> prepared;
  json errors = json::array();
  std::optional<OjsError> first;
  std::map<std::string, std::size_t> seen_ids;
  for (std::size_t i = 0; i < list.size(); ++i) {
    try {
      prepared.push_back(jobs.prepare(list[i]));
      // A duplicate decision per job would make the batch partial: unique jobs go one by one.
      if (prepared.back().job.document.contains("unique"))
        throw invalid_field("unique", "is not accepted in a batch PUSH; PUSH unique jobs one by one");
      const auto& id = prepared.back().job.id;
      if (auto [it, fresh] = seen_ids.emplace(id, i); !fresh)
        throw OjsError(ErrorCode::invalid_request, "id: repeats the id of jobs[" + std::to_string(it->second) + "]",
                       {{"field", "id"}, {"rule", "must be unique within the batch"}});
    } catch (const OjsError& e) {
      errors.push_back(refusal(i, e));
      if (!first) first = e;
    }
  }
  if (first) {
    const auto& r = errors[0];
    json details = r["details"];
    details["errors"] = errors;
    throw OjsError(first->code(), "batch refused, nothing enqueued: jobs[" + std::to_string(r["index"].get<std::size_t>()) +
                                      "]: " + r["message"].get<std::string>(), details);
  }

  admit_new_queues(s.queues, prepared, max_queues);
  jobs.admit_batch(prepared.size());
  std::vector<BatchJob> batch;
  batch.reserve(prepared.size());
  for (const auto& p : prepared)
    batch.push_back(store_record(p));  // with its scheduling indexes: one script for the whole batch
  const auto outcome = s.transitions.push_batch(batch);
  if (outcome.status == TransitionStatus::queue_full) throw queue_full_error(outcome.full_queue, outcome.full_detail);
  if (outcome.status == TransitionStatus::duplicate)
    throw OjsError(ErrorCode::duplicate, "batch refused, nothing enqueued: a job with id " + outcome.duplicate_id + " already exists",
                   {{"job_id", outcome.duplicate_id}});

  json out = json::array();
  json warnings = json::array();
  for (std::size_t i = 0; i < prepared.size(); ++i) {
    out.push_back(outcome.jobs[i].envelope());
    for (const auto& w : prepared[i].warnings) warnings.push_back("jobs[" + std::to_string(i) + "]: " + w);
  }
  json reply = {{"jobs", out}, {"count", out.size()}};
  if (!warnings.empty()) reply["warnings"] = std::move(warnings);  // ojs-schema-registry.md §7.3, warn mode
  return reply;
}

}  // namespace ojs::broker
