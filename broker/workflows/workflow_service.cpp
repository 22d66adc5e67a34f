#include "broker/workflows/workflow_service.hpp"

#include <spdlog/spdlog.h>

#include <map>
#include <set>

#include "ojs/core/error.hpp"
#include "ojs/core/time.hpp"
#include "ojs/core/uuid.hpp"

namespace ojs::broker {

using nlohmann::json;

namespace {


OjsError not_found(const std::string& id) {
  return OjsError(ErrorCode::not_found, "workflow " + id + " not found", {{"workflow_id", id}});
}

// An error of one job of the workflow, its field named from the request's root.
OjsError within(const std::string& prefix, const OjsError& e) {
  json details = e.details();
  if (details.is_object() && details.contains("field") && details["field"].is_string())
    details["field"] = prefix + "." + details["field"].get<std::string>();
  return OjsError(e.code(), prefix + ": " + e.what(), details);
}

// A step or job of the request as a PUSH body (its `name` belongs to the workflow).
PreparedJob prepare_job(PushService& jobs, const json& entry, const std::string& field) {
  if (!entry.is_object()) throw invalid_field(field, "must be a job object {type, args, options}");
  if (entry.contains("steps") || entry.contains("jobs"))
    throw invalid_field(field, "nested workflows are not supported (maximum nesting depth 1): give a job {type, args, options}");
  if (entry.contains("name") && !entry["name"].is_string()) throw invalid_field(field + ".name", "must be a string");
  json body = entry;
  body.erase("name");
  try {
    PreparedJob p = jobs.prepare(body);
    if (p.job.document.contains("unique")) throw invalid_field("unique", "is not accepted in a workflow");
    return p;
  } catch (const OjsError& e) {
    throw within(field, e);
  }
}

// Step states (spec/ojs-workflows.md §4.4) from the job's state; a job not stored
// yet is waiting, or cancelled once the workflow has ended.
std::string step_state(const std::optional<JobRecord>& job, bool workflow_running) {
  if (!job) return workflow_running ? "waiting" : "cancelled";
  const auto& s = job->state();
  if (s == "available" || s == "scheduled" || s == "retryable" || s == "pending") return "pending";
  if (s == "discarded") return "failed";
  return s;  // active, completed, cancelled
}

json time_field(const JobRecord& wf, const char* name) {
  auto ms = wf.get_int(name);
  return ms ? json(format_rfc3339(*ms)) : json(nullptr);
}

}  // namespace

json WorkflowService::create(const json& body) {
  if (!body.is_object()) throw invalid_field("$", "request body must be a JSON object");
  if (!body.contains("type") || !body["type"].is_string()) throw invalid_field("type", "is required: chain, group or batch");
  const std::string type = body["type"].get<std::string>();
  if (type != "chain" && type != "group" && type != "batch") throw invalid_field("type", "must be one of chain, group, batch");
  const std::string list_field = type == "chain" ? "steps" : "jobs";
  if (!body.contains(list_field)) throw invalid_field(list_field, "is required for a " + type + " workflow");
  const auto& list = body[list_field];
  if (!list.is_array() || list.empty()) throw invalid_field(list_field, "must be a non-empty array of jobs");
  if (list.size() > kMaxWorkflowJobs)
    throw invalid_field(list_field, "must hold at most " + std::to_string(kMaxWorkflowJobs) + " jobs");
  if (body.contains("name") && !body["name"].is_string()) throw invalid_field("name", "must be a string");
  const bool has_callbacks = body.contains("callbacks") && !body["callbacks"].is_null();
  if (type == "batch") {
    if (!has_callbacks || !body["callbacks"].is_object())
      throw invalid_field("callbacks", "is required for a batch: an object with on_complete, on_success and/or on_failure");
    bool any = false;
    for (const char* kind : kWorkflowCallbackKinds) any = any || body["callbacks"].contains(kind);
    if (!any) throw invalid_field("callbacks", "must hold at least one of on_complete, on_success, on_failure");
  } else if (has_callbacks) {
    throw invalid_field("callbacks", "only a batch workflow has callbacks");
  }

  const std::string id = make_uuidv7();
  std::vector<PreparedJob> members;
  std::set<std::string> ids;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string field = list_field + "[" + std::to_string(i) + "]";
    members.push_back(prepare_job(push_, list[i], field));
    auto& m = members.back();
    // One queue, so one Redis slot: each transition advances the workflow in its own script.
    if (m.job.queue != members.front().job.queue)
      throw invalid_field(field + ".options.queue", "must be the queue of " + list_field + "[0] ('" + members.front().job.queue +
                                                        "'): the jobs of a workflow share one queue; callbacks may name any queue");
    if (!ids.insert(m.job.id).second) throw invalid_field(field + ".id", "repeats the id of another job of the workflow");
    m.fields.emplace_back("workflow_id", id);
    m.fields.emplace_back("workflow_member", std::to_string(i));
  }
  const std::string queue = members.front().job.queue;

  std::vector<std::pair<std::string, std::string>> fields{{"id", id},
                                                          {"type", type},
                                                          {"name", body.value("name", std::string())},
                                                          {"queue", queue},
                                                          {"state", "running"},
                                                          {"total", std::to_string(members.size())},
                                                          {"completed", "0"},
                                                          {"failed", "0"}};
  for (const auto& [field, value] : members.front().fields)  // the first job's tenant (a pinned token's for all)
    if (field == "tenant") fields.emplace_back("tenant", value);
  std::vector<std::pair<std::string, std::string>> all_ids;
  std::vector<BatchJob> starting;
  for (std::size_t i = 0; i < members.size(); ++i) {
    const auto& m = members[i];
    const auto n = std::to_string(i);
    fields.emplace_back("m:" + n, m.job.id);
    fields.emplace_back("t:" + n, m.job.type);
    if (list[i].contains("name")) fields.emplace_back("n:" + n, list[i]["name"].get<std::string>());
    all_ids.emplace_back(m.job.id, m.job.queue);
    BatchJob record = store_record(m);
    if (type == "chain" && i > 0) fields.emplace_back("p:" + n, WorkflowStore::payload(record));  // stored when step i-1 completes
    else starting.push_back(std::move(record));
  }
  if (type == "batch") {
    for (const char* kind : kWorkflowCallbackKinds) {
      if (!body["callbacks"].contains(kind)) continue;
      const std::string k = kind;
      PreparedJob cb = prepare_job(push_, body["callbacks"][k], "callbacks." + k);
      if (!ids.insert(cb.job.id).second) throw invalid_field("callbacks." + k + ".id", "repeats the id of another job of the workflow");
      cb.fields.emplace_back("workflow_id", id);
      cb.fields.emplace_back("workflow_callback", k);
      fields.emplace_back("cb:" + k, WorkflowStore::payload(store_record(cb)));
      fields.emplace_back("cbid:" + k, cb.job.id);
      fields.emplace_back("cbq:" + k, cb.job.queue);
      fields.emplace_back("cbt:" + k, cb.job.type);
      all_ids.emplace_back(cb.job.id, cb.job.queue);
    }
  }
  if (!store_.create(queue, id, starting, fields, all_ids))
    throw OjsError(ErrorCode::duplicate, "workflow refused, nothing enqueued: one of its job ids already exists", {{"workflow_id", id}});
  return get(id);
}

json WorkflowService::list(int page, int per_page, const std::string& tenant_scope) {
  const auto ids = store_.ids();
  const std::size_t offset = static_cast<std::size_t>(page - 1) * per_page;
  json items = json::array();
  long long total = 0;
  if (tenant_scope.empty()) {
    total = static_cast<long long>(ids.size());
    for (std::size_t i = offset; i < ids.size() && items.size() < static_cast<std::size_t>(per_page); ++i) {
      try {
        items.push_back(get(ids[i])["workflow"]);
      } catch (const OjsError&) {  // gone since the directory was read
      }
    }
  } else {
    for (std::size_t i = 0; i < ids.size() && i < static_cast<std::size_t>(kListScan); ++i) {
      json wf;
      try {
        wf = get(ids[i])["workflow"];
      } catch (const OjsError&) {
        continue;
      }
      if (wf.value("tenant", std::string()) != tenant_scope) continue;
      if (static_cast<std::size_t>(total++) >= offset && items.size() < static_cast<std::size_t>(per_page)) items.push_back(std::move(wf));
    }
  }
  return {{"items", items}, {"pagination", {{"total", total}, {"page", page}, {"per_page", per_page}}}};
}

json WorkflowService::get(const std::string& id) {
  auto record = store_.get(id);
  if (!record) throw not_found(id);
  const JobRecord& wf = record->hash;
  const std::string type = wf.get("type");
  const bool running = wf.get("state") == "running";
  const int total = static_cast<int>(wf.get_int("total").value_or(0));

  std::vector<std::pair<std::string, std::string>> lookups;
  for (int i = 0; i < total; ++i) lookups.emplace_back(record->queue, wf.get("m:" + std::to_string(i)));
  std::vector<std::string> kinds;
  for (const char* kind : kWorkflowCallbackKinds)
    if (wf.has(std::string("cb:") + kind)) {
      kinds.push_back(kind);
      lookups.emplace_back(wf.get(std::string("cbq:") + kind), wf.get(std::string("cbid:") + kind));
    }
  const auto jobs = reads_.get_many(lookups);

  json members = json::array();
  for (int i = 0; i < total; ++i) {
    const auto n = std::to_string(i);
    const auto& job = jobs[i];
    json m{{"index", i}, {"type", wf.get("t:" + n)}, {"job_id", wf.get("m:" + n)}, {"state", step_state(job, running)}};
    if (wf.has("n:" + n)) m["name"] = wf.get("n:" + n);
    if (job) {
      const json envelope = job->envelope();
      for (const char* f : {"result", "error", "started_at", "completed_at"})
        if (envelope.contains(f)) m[f] = envelope[f];
    }
    members.push_back(std::move(m));
  }
  const long long completed = wf.get_int("completed").value_or(0), failed = wf.get_int("failed").value_or(0);
  json out{{"id", wf.get("id")}, {"type", type}, {"name", wf.get("name")}, {"state", wf.get("state")}, {"queue", record->queue},
           {"created_at", time_field(wf, "created_at")}};
  if (wf.has("tenant")) out["tenant"] = wf.get("tenant");
  if (wf.has("completed_at")) out["completed_at"] = time_field(wf, "completed_at");
  if (wf.has("cancelled_at")) out["cancelled_at"] = time_field(wf, "cancelled_at");
  // steps_total/steps_completed for every type: the admin dashboard shows them as a
  // fan-out's progress too (jobs_* are the spec's names there).
  out["steps_total"] = total;
  out["steps_completed"] = completed;
  if (type == "chain") {
    out["steps"] = members;
    if (auto f = wf.get_int("failed_step_index")) out["failed_step_index"] = *f;
  } else {
    out["jobs_total"] = total;
    out["jobs_completed"] = completed;
    out["jobs_failed"] = failed;
    out["jobs"] = members;
  }
  if (!kinds.empty()) {
    json callbacks = json::object();
    for (std::size_t c = 0; c < kinds.size(); ++c) {
      const std::string& k = kinds[c];
      const auto& job = jobs[total + c];
      const std::string marked = wf.get("cbs:" + k);  // due | enqueued | "" (not fired)
      std::string state = job ? step_state(job, true) : marked == "due" ? "due" : running ? "waiting" : "not_fired";
      callbacks[k] = {{"type", wf.get("cbt:" + k)}, {"queue", wf.get("cbq:" + k)}, {"job_id", wf.get("cbid:" + k)}, {"state", state}};
    }
    out["callbacks"] = callbacks;
  }
  out["metadata"] = {{"created_at", out["created_at"]}, {"completed_at", time_field(wf, "completed_at")},
                     {"job_count", total}, {"completed_count", completed}, {"failed_count", failed}};
  return {{"workflow", out}};
}

json WorkflowService::cancel(const std::string& id) {
  auto record = store_.get(id);
  if (!record) throw not_found(id);
  const Transition t = store_.cancel(record->queue, id);
  if (t.status == TransitionStatus::not_found) throw not_found(id);
  if (t.status == TransitionStatus::conflict)
    throw OjsError(ErrorCode::conflict, "workflow " + id + " is already in terminal state '" + t.detail + "'",
                   {{"workflow_id", id}, {"state", t.detail}});
  return get(id);
}

void WorkflowService::run_once() {
  // Due for over a second: the broker that ran the transition did not get to it.
  const auto before = now_ms() - 1000;
  for (const auto& queue : queues_.queues()) {
    for (const auto& id : store_.overdue_dispatches(queue, before)) {
      try {
        store_.dispatch_due(queue, id);
      } catch (const std::exception& e) {
        spdlog::warn("workflow {}: enqueueing its due callbacks failed ({}); the next pass retries", id, e.what());
      }
    }
  }
}

}  // namespace ojs::broker
