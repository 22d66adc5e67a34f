#include "broker/store/workflow_store.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "broker/store/job_directory.hpp"
#include "broker/store/keys.hpp"

namespace ojs::broker {

using nlohmann::json;

std::string WorkflowStore::payload(const BatchJob& job) {
  json fields = json::array();
  for (const auto& [f, v] : job.fields) {
    fields.push_back(f);
    fields.push_back(v);
  }
  return json{{"id", job.id},
              {"queue", job.queue},
              {"class", job.class_id},
              {"class_json", job.class_json},
              {"rank_base", rank_text(job.rank_base)},
              {"scheduled_at", optional_text(job.scheduled_at_ms)},
              {"escalate_after", optional_text(job.escalate_after_ms)},
              {"reservation_timeout", optional_text(job.reservation_timeout_ms)},
              {"fields", fields}}
      .dump();
}

BatchJob WorkflowStore::from_payload(const std::string& text) {
  const json p = json::parse(text);
  const auto optional_ms = [&p](const char* name) -> std::optional<std::int64_t> {
    const auto s = p.value(name, std::string());
    if (s.empty()) return std::nullopt;
    return std::stoll(s);
  };
  BatchJob job{p.at("queue").get<std::string>(), p.at("id").get<std::string>(), p.at("class").get<std::string>(),
               p.at("class_json").get<std::string>(), std::stod(p.at("rank_base").get<std::string>()),
               optional_ms("scheduled_at"), {}, optional_ms("escalate_after"), optional_ms("reservation_timeout")};
  const auto& fields = p.at("fields");
  for (std::size_t i = 0; i + 1 < fields.size(); i += 2)
    job.fields.emplace_back(fields[i].get<std::string>(), fields[i + 1].get<std::string>());
  return job;
}

bool WorkflowStore::create(const std::string& queue, const std::string& id, const std::vector<BatchJob>& starting,
                           const std::vector<std::pair<std::string, std::string>>& fields,
                           const std::vector<std::pair<std::string, std::string>>& ids) {
  auto& redis = redis_;
  if (redis.command({"HSETNX", keys::workflow_directory, id, queue}).integer != 1) return false;
  // A refused workflow leaves no directory entry behind (all or none).
  const auto refuse = [&] {
    redis.command({"HDEL", keys::workflow_directory, id});
    return false;
  };
  if (JobDirectory(redis_).reserve_workflow_ids(id, ids)) return refuse();  // a later PUSH of one of them is a 409
  std::vector<std::string> script_keys{keys::workflow(queue, id), keys::delayed(queue),         keys::seq(queue),
                                       keys::events(queue),       keys::classes(queue),         keys::classes_version(queue),
                                       keys::escalations(queue),  keys::reservation_waits(queue), keys::class_heads(queue)};
  std::vector<std::string> args{std::to_string(starting.size())};
  for (const auto& job : starting) {
    script_keys.push_back(keys::job(queue, job.id));
    script_keys.push_back(keys::ready(queue, job.class_id));
    args.push_back(payload(job));
  }
  append_fields(args, fields);
  // Refused here, a concurrent PUSH stored a job under one of the ids since they were
  // reserved: its directory entry is that job's now, so the ids stay.
  if (JobStore::transition_from(redis.eval("workflow_create", script_keys, args)).status == TransitionStatus::ok) return true;
  return refuse();
}

std::vector<std::string> WorkflowStore::ids() {
  std::vector<std::string> out;
  for (const auto& e : redis_.command({"HKEYS", keys::workflow_directory}).elements) out.push_back(e.str);
  std::sort(out.rbegin(), out.rend());
  return out;
}

std::optional<WorkflowRecord> WorkflowStore::get(const std::string& id) {
  auto& redis = redis_;
  const auto queue = redis.command({"HGET", keys::workflow_directory, id});
  if (queue.is_nil()) return std::nullopt;
  const auto hash = redis.command({"HGETALL", keys::workflow(queue.str, id)});
  if (hash.elements.empty()) return std::nullopt;
  return WorkflowRecord{queue.str, JobRecord::from_flat_array(hash)};
}

Transition WorkflowStore::cancel(const std::string& queue, const std::string& id) {
  std::vector<std::string> script_keys{keys::workflow(queue, id), keys::job_prefix(queue), keys::ready_prefix(queue),
                                       keys::delayed(queue), keys::active(queue), keys::stats(queue), keys::events(queue),
                                       keys::ledger(queue), keys::tenant_ledger(queue), keys::workflow_dispatch(queue),
                                       keys::class_heads(queue), keys::finished_prefix(queue), keys::on_hold(queue)};
  for (auto& k : keys::usage_transition_keys(queue)) script_keys.push_back(std::move(k));  // a running job's use
  return JobStore::transition_from(redis_.eval("workflow_cancel", script_keys, {id}));
}

void WorkflowStore::dispatch_due(const std::string& queue, const std::string& id) {
  auto& redis = redis_;
  if (redis.command({"ZSCORE", keys::workflow_dispatch(queue), id}).is_nil()) return;
  const auto hash = redis.command({"HGETALL", keys::workflow(queue, id)});
  const JobRecord wf = JobRecord::from_flat_array(hash);
  for (const char* kind : kWorkflowCallbackKinds) {
    const std::string k = kind;
    if (wf.get("cbs:" + k) != "due") continue;
    BatchJob job = from_payload(wf.get("cb:" + k));
    job.fields.emplace_back("parent_results", wf.get("cb_parent_results"));
    // Its id was reserved at creation (reserve_workflow_ids); push.lua answers
    // duplicate when an earlier dispatch stored it: stored once.
    JobStore(redis_).push(job);
    redis.command({"HSET", keys::workflow(queue, id), "cbs:" + k, "enqueued"});
  }
  redis.command({"ZREM", keys::workflow_dispatch(queue), id});
}

std::vector<std::string> WorkflowStore::overdue_dispatches(const std::string& queue, std::int64_t before_ms) {
  const auto reply = redis_.command(
      {"ZRANGEBYSCORE", keys::workflow_dispatch(queue), "-inf", std::to_string(before_ms), "LIMIT", "0", "100"});
  std::vector<std::string> ids;
  for (const auto& e : reply.elements) ids.push_back(e.str);
  return ids;
}

}  // namespace ojs::broker
