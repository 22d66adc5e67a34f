#include "broker/store/job_store.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <stdexcept>

#include "broker/store/job_directory.hpp"
#include "broker/store/job_store_internal.hpp"
#include "broker/store/reply_integer.hpp"

namespace ojs::broker {

namespace detail {

TransitionStatus status_of(const std::string& word) {
  if (word == "ok") return TransitionStatus::ok;
  if (word == "not_found") return TransitionStatus::not_found;
  if (word == "conflict") return TransitionStatus::conflict;
  if (word == "stale" || word == "stale_config") return TransitionStatus::stale;
  if (word == "extended") return TransitionStatus::extended;
  if (word == "duplicate") return TransitionStatus::duplicate;
  if (word == "paused") return TransitionStatus::paused;
  if (word == "queue_full") return TransitionStatus::queue_full;
  throw std::runtime_error("unexpected script status: " + word);
}

ClaimedQueues& hints() {
  static ClaimedQueues instance;
  return instance;
}

}  // namespace detail

using detail::hints;
using detail::kSlice;
using detail::status_of;
using detail::with_usage_keys;
using detail::with_workflow_keys;

std::string rank_text(double rank) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f", rank);
  return buf;
}

std::string optional_text(std::optional<std::int64_t> v) { return v ? std::to_string(*v) : std::string(); }

std::string number_text(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

void append_fields(std::vector<std::string>& args, const std::vector<std::pair<std::string, std::string>>& fields) {
  for (const auto& [field, value] : fields) {
    args.push_back(field);
    args.push_back(value);
  }
}

Transition JobStore::transition_from(const RedisValue& reply) {
  Transition t;
  if (reply.type != RedisValue::Type::array || reply.elements.empty()) throw std::runtime_error("malformed script reply");
  t.status = status_of(reply.elements[0].str);
  if (reply.elements.size() > 1) {
    const auto& second = reply.elements[1];
    if (second.type == RedisValue::Type::array) t.job = JobRecord::from_flat_array(second);
    else t.detail = second.str.empty() ? std::to_string(second.integer) : second.str;
  }
  return t;
}

Transition JobStore::push(const BatchJob& job, const PushInOneTrip& single) {
  const auto& q = job.queue;
  std::vector<std::string> args{job.id, job.class_id, job.class_json, rank_text(job.rank_base),
                                optional_text(job.scheduled_at_ms), optional_text(job.escalate_after_ms),
                                optional_text(job.reservation_timeout_ms), optional_text(single.config_version)};
  append_fields(args, job.fields);
  std::vector<std::vector<std::string>> directory;  // ahead of the script (see PushInOneTrip)
  if (single.register_id) directory.push_back(detail::job_directory_entry(job.id, q));
  if (single.register_queue) directory.push_back(detail::queue_directory_entry(q));
  if (auto entry = expiring_entry(job)) directory.push_back(std::move(*entry));
  Transition t = transition_from(redis_.eval_after(directory, "push",
                                                   {keys::job(q, job.id), keys::classes(q), keys::classes_version(q),
                                                    keys::ready(q, job.class_id), keys::delayed(q), keys::seq(q), keys::events(q),
                                                    keys::escalations(q), keys::reservation_waits(q), keys::class_heads(q),
                                                    keys::config(q), keys::ready_prefix(q), keys::on_hold(q)},
                                                   args));
  if (t.status != TransitionStatus::ok) return t;
  // The script replies with what it decided (state, timestamps); the rest of the
  // record is what was sent, as push.lua wrote it.
  auto& f = t.job.fields;
  f["id"] = job.id;
  f["class"] = job.class_id;
  f["rank_base"] = args[3];
  f["attempt"] = "0";
  for (const auto& [field, value] : job.fields) f.emplace(field, value);
  return t;
}

Transition JobStore::ack(const std::string& queue, const std::string& id, const std::string& result_json,
                         const std::string& worker_id) {
  const auto hint = redis_.endpoint().describe() + '|' + id;
  std::vector<std::string> ack_keys{keys::job(queue, id), keys::active(queue), keys::events(queue), keys::ledger(queue),
                                    keys::tenant_ledger(queue), keys::held_prefix(queue)};
  for (auto& k : keys::usage_transition_keys(queue)) ack_keys.push_back(std::move(k));  // 7-8
  // 9-19 only for a workflow's job (a key costs the call ~1.1k instructions): known
  // from this process's claim, else ack.lua asks for them.
  Transition t = lean_transition(redis_, "ack", std::move(ack_keys), hints().workflow_job(hint), {result_json, worker_id}, queue, id);
  if (t.status == TransitionStatus::ok) hints().forget_claimed(hint);
  return t;
}

Transition JobStore::fail(const JobRecord& snapshot, const std::string& outcome, std::int64_t due_ms,
                          const std::string& error_json, const std::string& errors_json, bool require_expired,
                          const std::string& worker_id) {
  const auto& queue = snapshot.queue();
  const auto& id = snapshot.id();
  std::vector<std::string> fail_keys{keys::job(queue, id),          keys::active(queue),      keys::delayed(queue),
                                     keys::dead(queue),             keys::stats(queue),       keys::events(queue),
                                     keys::ledger(queue),           keys::tenant_ledger(queue), keys::preempting(queue),
                                     keys::ready(queue, snapshot.get("class")), keys::seq(queue), keys::held_prefix(queue),
                                     keys::class_heads(queue)};
  for (auto& k : keys::usage_transition_keys(queue)) fail_keys.push_back(std::move(k));  // 14-15
  const std::vector<std::string> args{std::to_string(snapshot.attempt()), outcome, std::to_string(due_ms), error_json,
                                      errors_json, require_expired ? "1" : "0", worker_id};
  // 16-26 only for a workflow's job; fail.lua asks for them should the snapshot not
  // name the workflow.
  Transition t = lean_transition(redis_, "fail", std::move(fail_keys), snapshot.has("workflow_id"), args, queue, id);
  if (t.status == TransitionStatus::ok) hints().forget_claimed(redis_.endpoint().describe() + '|' + id);
  return t;
}

Transition JobStore::cancel(const std::string& queue, const std::string& id, bool kill) {
  auto cancel_keys = with_usage_keys({keys::job(queue, id), keys::ready_prefix(queue), keys::delayed(queue), keys::active(queue),
                                      keys::stats(queue), keys::events(queue), keys::ledger(queue), keys::tenant_ledger(queue),
                                      keys::finished_prefix(queue), keys::on_hold(queue)},
                                     queue);  // 11-12
  cancel_keys.push_back(keys::class_heads(queue));
  // 14-24, the workflow keys, only for a workflow's job: cancel.lua asks for them.
  return lean_transition(redis_, "cancel", std::move(cancel_keys), false, {kill ? "kill" : "cancel"}, queue, id);
}

Transition JobStore::lean_transition(RedisPool& redis, const std::string& script, std::vector<std::string> script_keys,
                                     bool workflow_job, const std::vector<std::string>& args, const std::string& queue,
                                     const std::string& id) {
  const std::vector<std::vector<std::string>> read_back{{"HGETALL", keys::job(queue, id)}};
  if (workflow_job) script_keys = with_workflow_keys(std::move(script_keys), queue);
  std::vector<RedisValue> after;
  auto reply = redis.eval(script, script_keys, args, read_back, &after);
  if (!workflow_job && !reply.elements.empty() && reply.elements.front().str == "need_keys") {
    after.clear();
    reply = redis.eval(script, with_workflow_keys(std::move(script_keys), queue), args, read_back, &after);
  }
  Transition t = transition_from(reply);
  if (t.status == TransitionStatus::ok) {
    if (!after.empty()) t.job = JobRecord::from_flat_array(after.front());
    t.job.fields.emplace("id", id);  // gone already (purged in between): still names the job
  }
  return t;
}

bool JobStore::process_gone(const std::string& queue, const std::string& id, const std::string& worker_id) {
  return redis_.eval("process_gone", {keys::job(queue, id), keys::held(queue, worker_id)}, {worker_id}).integer == 1;
}

std::vector<std::string> JobStore::extend(const std::string& queue, const std::string& worker_id,
                                          std::int64_t visibility_ms, const std::vector<std::string>& ids) {
  std::vector<std::string> out;
  for (std::size_t from = 0; from < ids.size(); from += kSlice) {
    const auto to = std::min(ids.size(), from + kSlice);
    std::vector<std::string> script_keys{keys::active(queue)};
    std::vector<std::string> args{worker_id, std::to_string(visibility_ms)};
    for (std::size_t i = from; i < to; ++i) {
      script_keys.push_back(keys::job(queue, ids[i]));
      args.push_back(ids[i]);
    }
    for (const auto& e : redis_.eval("extend", script_keys, args).elements) out.push_back(e.str);
  }
  return out;
}

std::optional<std::vector<std::string>> JobStore::expiring_entry(const BatchJob& job) {
  for (const auto& [field, value] : job.fields)
    if (field == "expires_at") return std::vector<std::string>{"ZADD", keys::expiring(job.queue), value, job.id};
  return std::nullopt;
}

Transition JobStore::checkpoint(const std::string& queue, const std::string& id, const std::string& worker_id,
                               const std::string& checkpoint_json, int max_count) {
  return lean_transition(redis_, "checkpoint", {keys::job(queue, id), keys::events(queue)}, false,
                         {worker_id, checkpoint_json, std::to_string(max_count)}, queue, id);
}

Transition JobStore::durable_checkpoint(const std::string& queue, const std::string& id, bool save, const std::string& worker_id,
                                       const std::string& state_json) {
  return transition_from(redis_.eval("durable_checkpoint", {keys::job(queue, id)}, {save ? "save" : "delete", worker_id, state_json}));
}

std::vector<std::vector<std::string>> budget_reads(const std::string& queue) {
  return {{"HMGET", keys::config(queue), "max_total_gpus", "max_concurrent_gpu_jobs", "max_total_gpu_memory_mb", "cohort_max_gpus",
           "cohort", "max_total_tpu_chips"},
          {"HMGET", keys::ledger(queue), "gpus", "gpu_jobs", "gpu_mem_mb", "borrowed_gpus", "tpu_chips"}};
}

BudgetUse budget_from(const RedisValue& limits, const RedisValue& ledger) {
  BudgetUse b;
  b.nominal_gpus = integer_of(limits.elements.at(0));
  b.cohort_gpus = integer_of(limits.elements.at(3));
  if (!limits.elements.at(4).is_nil()) b.cohort = limits.elements.at(4).str;
  b.max_gpus = b.cohort_gpus ? b.cohort_gpus : b.nominal_gpus;  // as _lib.lua budget_block reads it
  b.max_jobs = integer_of(limits.elements.at(1));
  b.gpus_in_use = integer_of(ledger.elements.at(0)).value_or(0);
  b.gpu_jobs = integer_of(ledger.elements.at(1)).value_or(0);
  b.max_gpu_mem_mb = integer_of(limits.elements.at(2));
  b.gpu_mem_mb_in_use = integer_of(ledger.elements.at(2)).value_or(0);
  b.borrowed_gpus = integer_of(ledger.elements.at(3)).value_or(0);
  b.max_tpu_chips = integer_of(limits.elements.at(5));
  b.tpu_chips_in_use = integer_of(ledger.elements.at(4)).value_or(0);
  return b;
}

std::vector<std::vector<std::string>> tenant_quota_reads(const std::string& queue) {
  return {{"HGETALL", keys::tenant_quotas(queue)}, {"HGETALL", keys::tenant_ledger(queue)}};
}

TenantQuotaUse tenant_quotas_from(const RedisValue& limits, const RedisValue& used) {
  return {integer_hash(limits), integer_hash(used)};
}

}  // namespace ojs::broker
