#include "broker/store/job_store.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <set>
#include <unordered_map>

#include "broker/store/cron_store.hpp"
#include "broker/store/job_index_store.hpp"
#include "broker/store/keys.hpp"
#include "broker/store/reply_integer.hpp"
#include "broker/store/preemption_store.hpp"
#include "broker/store/priority_score.hpp"
#include "broker/store/progress_store.hpp"
#include "broker/store/stats_history_store.hpp"
#include "broker/store/usage_store.hpp"
#include "broker/store/unique_store.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker {

namespace {

TransitionStatus status_of(const std::string& word) {
  if (word == "ok") return TransitionStatus::ok;
  if (word == "not_found") return TransitionStatus::not_found;
  if (word == "conflict") return TransitionStatus::conflict;
  if (word == "stale" || word == "stale_config") return TransitionStatus::stale;
  if (word == "extended") return TransitionStatus::extended;
  if (word == "duplicate") return TransitionStatus::duplicate;
  if (word == "paused") return TransitionStatus::paused;
  if (word == "queue_full") return TransitionStatus::queue_full;  // [backpressure]
  throw std::runtime_error("unexpected script status: " + word);
}

}  // namespace

std::string rank_text(double rank) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f", rank);
  return buf;
}

std::string optional_text(std::optional<std::int64_t> v) { return v ? std::to_string(*v) : std::string(); }

void append_fields(std::vector<std::string>& args, const std::vector<std::pair<std::string, std::string>>& fields) {
  for (const auto& [field, value] : fields) {
    args.push_back(field);
    args.push_back(value);
  }
}

namespace {

// The directory entries a new job needs (global slot), written ahead of its queue's
// script; HSETNX: the first write wins (the queue's value is when it was first seen).
std::vector<std::string> job_directory_entry(const std::string& id, const std::string& queue) {
  return {"HSETNX", keys::job_directory, id, queue};
}
std::vector<std::string> queue_directory_entry(const std::string& queue) {
  return {"HSETNX", keys::queue_directory, queue, std::to_string(time(nullptr) * 1000LL)};
}

// [workflows] A job transition's keys followed by those that advance its workflow,
// then the keys the script declares after them (`after`).
std::vector<std::string> with_workflow_keys(std::vector<std::string> script_keys, const std::string& queue,
                                            std::vector<std::string> after = {}) {
  for (auto& k : keys::workflow_transition_keys(queue)) script_keys.push_back(std::move(k));
  for (auto& k : after) script_keys.push_back(std::move(k));
  return script_keys;
}

// [usage] `script_keys` followed by the keys that charge an ended attempt's use.
std::vector<std::string> with_usage_keys(std::vector<std::string> script_keys, const std::string& queue) {
  for (auto& k : keys::usage_transition_keys(queue)) script_keys.push_back(std::move(k));
  return script_keys;
}

// The ids a single script call extends or a single HMGET resolves: one call holds
// Redis's one thread, so a 100k-id heartbeat is cut into slices that other
// clients' commands interleave with.
constexpr std::size_t kSlice = 500;

}  // namespace

// What this process learned from its own claims, to spare Redis reads (keyed by
// Redis endpoint, then job id; bounded, starting over past the bound): the queue of
// each job it handed out. A job never changes queue, so its ACK/NACK skips the
// directory read.
namespace {

class StoreHints {
 public:
  std::optional<std::string> claimed_queue(const std::string& job) {
    std::lock_guard lock(mutex_);
    auto it = claimed_.find(job);
    if (it == claimed_.end()) return std::nullopt;
    return it->second;
  }
  void remember_claimed(const std::string& job, const std::string& queue) {
    std::lock_guard lock(mutex_);
    if (claimed_.size() >= kMaxClaimed) claimed_.clear();
    claimed_[job] = queue;
  }
  void forget_claimed(const std::string& job) {
    std::lock_guard lock(mutex_);
    claimed_.erase(job);
  }

 private:
  static constexpr std::size_t kMaxClaimed = 100000;
  std::mutex mutex_;
  std::unordered_map<std::string, std::string> claimed_;
};

StoreHints& hints() {
  static StoreHints instance;
  return instance;
}

}  // namespace

PreemptionStore JobStore::preemption() { return PreemptionStore(redis_); }
UniqueStore JobStore::unique() { return UniqueStore(redis_); }
CronStore JobStore::crons() { return CronStore(redis_); }
ProgressStore JobStore::progress() { return ProgressStore(redis_); }
JobIndexStore JobStore::index() { return JobIndexStore(redis_); }
StatsHistoryStore JobStore::stats_history() { return StatsHistoryStore(redis_); }
UsageStore JobStore::usage() { return UsageStore(redis_); }

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

bool JobStore::reserve_id(const std::string& id, const std::string& queue) { return !reserve_ids({{id, queue}}); }

namespace {
// Drops the directory entries of ids this call reserved, for a request then refused.
void release_ids(RedisPool& redis, const std::vector<std::string>& ids) {
  for (std::size_t at = 0; at < ids.size(); at += kSlice) {
    std::vector<std::string> cmd{"HDEL", keys::job_directory};
    for (std::size_t i = at; i < std::min(ids.size(), at + kSlice); ++i) cmd.push_back(ids[i]);
    redis.command(cmd);
  }
}
}  // namespace

// The directory (global slot) is written before the job (its queue's slot): a crash
// between the two leaves an entry without a job, never a job nobody can find.
// All or none: when an id is taken nothing is registered, no id and no queue. The
// ids are read before any is written, so a hostile producer's refused batches
// cannot grow the directory (issue 26 #12); an id a concurrent PUSH takes in between
// has this call's own entries released.
std::optional<std::string> JobStore::reserve_ids(const std::vector<std::pair<std::string, std::string>>& ids) {
  // An id is taken only if its job really exists (a PUSH interrupted between the
  // two writes leaves a dangling entry, which is reused).
  // Nor is an id a workflow holds for a step or callback it stores later (issue 26 #7).
  const auto taken = [this](const std::string& id) {
    const auto existing = queue_of(id);
    if (existing && redis_.command({"EXISTS", keys::job(*existing, id)}).integer == 1) return true;
    return redis_.command({"HEXISTS", keys::workflow_job_ids, id}).integer == 1;
  };
  for (std::size_t at = 0; at < ids.size(); at += kSlice) {
    std::vector<std::string> read{"HMGET", keys::job_directory};
    for (std::size_t i = at; i < std::min(ids.size(), at + kSlice); ++i) read.push_back(ids[i].first);
    const auto entries = redis_.command(read);
    for (std::size_t k = 0; k < entries.elements.size(); ++k)
      if (!entries.elements[k].is_nil() && taken(ids[at + k].first)) return ids[at + k].first;
  }

  std::vector<std::vector<std::string>> cmds;
  for (const auto& [id, queue] : ids) cmds.push_back(job_directory_entry(id, queue));
  const auto replies = redis_.pipeline(cmds);
  std::vector<std::string> written;  // this call's entries: released if an id turns out taken
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto& [id, queue] = ids[i];
    if (replies[i].integer != 1) {
      if (taken(id)) {  // a concurrent PUSH stored it since the read
        release_ids(redis_, written);
        return id;
      }
      redis_.command({"HSET", keys::job_directory, id, queue});
    }
    written.push_back(id);
  }
  std::vector<std::vector<std::string>> queues;
  for (const auto& [id, queue] : ids) queues.push_back(queue_directory_entry(queue));
  redis_.pipeline(queues);
  return std::nullopt;
}

std::optional<std::string> JobStore::reserve_workflow_ids(const std::string& workflow_id,
                                                          const std::vector<std::pair<std::string, std::string>>& ids) {
  if (auto taken = reserve_ids(ids)) return taken;
  std::vector<std::vector<std::string>> cmds;
  for (std::size_t from = 0; from < ids.size(); from += kSlice) {  // one HSET per slice, not one huge command
    std::vector<std::string> hset{"HSET", keys::workflow_job_ids};
    for (std::size_t i = from; i < std::min(ids.size(), from + kSlice); ++i) {
      hset.push_back(ids[i].first);
      hset.push_back(workflow_id);
    }
    cmds.push_back(std::move(hset));
  }
  if (!cmds.empty()) redis_.pipeline(cmds);
  return std::nullopt;
}

Transition JobStore::push(const BatchJob& job, const PushInOneTrip& single) {
  const auto& q = job.queue;
  std::vector<std::string> args{job.id, job.class_id, job.class_json, rank_text(job.rank_base),
                                optional_text(job.scheduled_at_ms), optional_text(job.escalate_after_ms),
                                optional_text(job.reservation_timeout_ms), optional_text(single.config_version)};
  append_fields(args, job.fields);
  std::vector<std::vector<std::string>> directory;  // ahead of the script (see PushInOneTrip)
  if (single.register_id) directory.push_back(job_directory_entry(job.id, q));
  if (single.register_queue) directory.push_back(queue_directory_entry(q));
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

std::optional<std::string> JobStore::queue_of(const std::string& id) {
  if (auto queue = hints().claimed_queue(redis_.endpoint().describe() + '|' + id)) return queue;
  auto v = redis_.command({"HGET", keys::job_directory, id});
  if (v.is_nil()) return std::nullopt;
  return v.str;
}

std::optional<JobRecord> JobStore::get(const std::string& queue, const std::string& id) {
  auto v = redis_.command({"HGETALL", keys::job(queue, id)});
  if (v.elements.empty()) return std::nullopt;
  return JobRecord::from_flat_array(v);
}

std::optional<JobRecord> JobStore::get(const std::string& id) {
  auto queue = queue_of(id);
  if (!queue) return std::nullopt;
  return get(*queue, id);
}

std::vector<std::optional<JobRecord>> JobStore::get_many(const std::vector<std::pair<std::string, std::string>>& jobs) {
  std::vector<std::optional<JobRecord>> out;
  if (jobs.empty()) return out;
  std::vector<std::vector<std::string>> cmds;
  for (const auto& [queue, id] : jobs) cmds.push_back({"HGETALL", keys::job(queue, id)});
  for (const auto& reply : redis_.pipeline(cmds)) {
    if (reply.elements.empty()) out.emplace_back();
    else out.emplace_back(JobRecord::from_flat_array(reply));
  }
  return out;
}

std::string JobStore::classes_version(const std::string& queue) {
  auto v = redis_.command({"GET", keys::classes_version(queue)});
  return v.is_nil() ? "0" : v.str;
}

ClassSet JobStore::load_classes(const std::string& queue) {
  auto replies = redis_.pipeline({{"GET", keys::classes_version(queue)}, {"HGETALL", keys::classes(queue)}});
  ClassSet set;
  set.version = replies[0].is_nil() ? "0" : replies[0].str;
  const auto& arr = replies[1].elements;
  for (std::size_t i = 0; i + 1 < arr.size(); i += 2) set.classes[arr[i].str] = arr[i + 1].str;
  return set;
}

ClaimOutcome JobStore::claim(const std::string& queue, const std::string& worker_id,
                             std::optional<std::int64_t> request_visibility_ms, std::int64_t default_visibility_ms,
                             int count, const std::string& classes_version, const std::vector<EligibleClass>& eligible,
                             bool record_held) {
  std::vector<std::string> args{worker_id,
                                optional_text(request_visibility_ms),
                                std::to_string(default_visibility_ms),
                                std::to_string(count),
                                classes_version,
                                score_band_arg()};
  std::vector<std::string> claim_keys{keys::classes_version(queue), keys::paused(queue), keys::delayed(queue),
                                      keys::active(queue),          keys::seq(queue),    keys::events(queue),
                                      keys::config(queue),          keys::ledger(queue), keys::tenant_quotas(queue),
                                      keys::tenant_ledger(queue),   keys::job_prefix(queue), keys::ready_prefix(queue),
                                      keys::stats(queue),           keys::rate_window(queue), keys::class_heads(queue),
                                      keys::held(queue, worker_id)};
  claim_keys = with_workflow_keys(std::move(claim_keys), queue);  // [workflows] an expired step ends it
  claim_keys.push_back(keys::finished_prefix(queue));             // [admin] 28: an expired job is finished
  // [usage] 29-32: the fair order's use per tenant, then the journal it folds first
  // and what the fold writes (usage_fold_keys' keys in claim.lua's order; the config is 7).
  for (auto* key : {keys::usage, keys::usage_journal, keys::usage_totals, keys::usage_hours}) claim_keys.push_back(key(queue));
  // One line per eligible class, parsed by claim.lua only for the classes it looks at.
  std::string lines;
  double max_bonus = eligible.empty() ? 0 : eligible.front().bonus;
  for (const auto& c : eligible) {
    max_bonus = std::max(max_bonus, c.bonus);
    lines += '\n' + c.id + '\t' + std::to_string(c.bonus) + '\t' + std::to_string(c.hold_enqueued_after_ms) + '\t' +
             std::to_string(c.gpus) + '\t' + c.devices_json + '\t' + std::to_string(c.gpu_memory_mb);
    if (c.backfill_before_ms > 0) lines += '\t' + std::to_string(c.backfill_before_ms);  // [backfill] a 7th field
  }
  args.push_back(std::to_string(max_bonus));
  args.push_back(std::to_string(eligible.size()));
  args.push_back(std::move(lines));
  args.push_back(record_held ? "1" : "");
  auto reply = redis_.eval("claim", claim_keys, args);
  ClaimOutcome out;
  out.status = status_of(reply.elements.at(0).str);
  if (out.status == TransitionStatus::stale) out.current_version = reply.elements.at(1).str;
  if (out.status == TransitionStatus::ok) {
    for (const auto& j : reply.elements.at(1).elements) out.jobs.push_back(JobRecord::from_flat_array(j));
    const auto& blocked = reply.elements.at(2).elements;
    for (std::size_t i = 0; i + 3 < blocked.size(); i += 4)
      out.budget_blocked.push_back({blocked[i].str, blocked[i + 1].integer, blocked[i + 2].integer, blocked[i + 3].str});
    if (reply.elements.size() > 3) out.rate_limited = reply.elements[3].str;
    for (const auto& job : out.jobs) hints().remember_claimed(redis_.endpoint().describe() + '|' + job.id(), queue);
  }
  return out;
}

Transition JobStore::ack(const std::string& queue, const std::string& id, const std::string& result_json,
                         const std::string& worker_id) {
  auto after = with_usage_keys({keys::finished_prefix(queue)}, queue);
  after.push_back(keys::run_times_prefix(queue));  // [estimate] 21
  Transition t = transition_from(redis_.eval("ack",
                                             with_workflow_keys({keys::job(queue, id), keys::active(queue), keys::stats(queue),
                                                                 keys::events(queue), keys::ledger(queue), keys::tenant_ledger(queue),
                                                                 keys::held_prefix(queue)},
                                                                queue, after),
                                             {result_json, worker_id}));
  if (t.status == TransitionStatus::ok) hints().forget_claimed(redis_.endpoint().describe() + '|' + id);
  return t;
}

Transition JobStore::fail(const JobRecord& snapshot, const std::string& outcome, std::int64_t due_ms,
                          const std::string& error_json, const std::string& errors_json, bool require_expired,
                          const std::string& worker_id) {
  const auto& queue = snapshot.queue();
  Transition t = transition_from(redis_.eval("fail",
                                     with_workflow_keys({keys::job(queue, snapshot.id()), keys::active(queue),
                                                         keys::delayed(queue), keys::dead(queue), keys::stats(queue),
                                                         keys::events(queue), keys::ledger(queue), keys::tenant_ledger(queue),
                                                         keys::preempting(queue), keys::ready(queue, snapshot.get("class")),
                                                         keys::seq(queue), keys::held_prefix(queue)},
                                                        queue, with_usage_keys({keys::finished_prefix(queue)}, queue)),
                                     {std::to_string(snapshot.attempt()), outcome, std::to_string(due_ms), error_json,
                                      errors_json, require_expired ? "1" : "0", worker_id}));
  if (t.status == TransitionStatus::ok) hints().forget_claimed(redis_.endpoint().describe() + '|' + snapshot.id());
  return t;
}

Transition JobStore::cancel(const std::string& queue, const std::string& id) {
  return transition_from(redis_.eval("cancel",
                                     with_workflow_keys({keys::job(queue, id), keys::ready_prefix(queue), keys::delayed(queue),
                                                         keys::active(queue), keys::stats(queue), keys::events(queue),
                                                         keys::ledger(queue), keys::tenant_ledger(queue)},
                                                        queue, with_usage_keys({keys::finished_prefix(queue), keys::on_hold(queue)}, queue)),
                                     {}));
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

std::map<std::string, std::vector<std::string>> JobStore::group_by_queue(const std::vector<std::string>& ids) {
  std::map<std::string, std::vector<std::string>> out;
  for (std::size_t from = 0; from < ids.size(); from += kSlice) {
    const auto to = std::min(ids.size(), from + kSlice);
    std::vector<std::string> hmget{"HMGET", keys::job_directory};
    hmget.insert(hmget.end(), ids.begin() + static_cast<std::ptrdiff_t>(from), ids.begin() + static_cast<std::ptrdiff_t>(to));
    const auto reply = redis_.command(hmget);
    for (std::size_t i = 0; i < reply.elements.size(); ++i)
      if (!reply.elements[i].is_nil()) out[reply.elements[i].str].push_back(ids[from + i]);
  }
  return out;
}

std::optional<std::vector<std::string>> JobStore::expiring_entry(const BatchJob& job) {
  for (const auto& [field, value] : job.fields)
    if (field == "expires_at") return std::vector<std::string>{"ZADD", keys::expiring(job.queue), value, job.id};
  return std::nullopt;
}

long long JobStore::promote(const std::string& queue) {
  return redis_.eval("promote", with_workflow_keys({keys::stats(queue), keys::events(queue)}, queue, {keys::finished_prefix(queue)}), {})
      .integer;
}

JobStore::ExpirySweep JobStore::sweep_expired(const std::string& queue, int limit) {
  const auto reply = redis_.eval("expire_sweep",
                                 with_workflow_keys({keys::expiring(queue), keys::stats(queue), keys::events(queue)}, queue,
                                                    {keys::finished_prefix(queue)}),
                                 {std::to_string(limit)});
  if (reply.elements.size() < 2) throw std::runtime_error("malformed expire_sweep reply");
  return {reply.elements[0].integer, reply.elements[1].integer};
}

std::vector<JobStore::DueWork> JobStore::due_work(const std::vector<std::string>& queues, std::int64_t now_ms) {
  std::vector<DueWork> out(queues.size());
  if (queues.empty()) return out;
  const auto now = std::to_string(now_ms);
  std::vector<std::vector<std::string>> cmds;
  cmds.reserve(3 * queues.size());
  for (const auto& q : queues) {
    cmds.push_back({"ZRANGEBYSCORE", keys::delayed(q), "-inf", now, "LIMIT", "0", "1"});
    cmds.push_back({"ZRANGEBYSCORE", keys::gangs(q), "-inf", now, "LIMIT", "0", "1"});
    cmds.push_back({"ZRANGEBYSCORE", keys::expiring(q), "-inf", now, "LIMIT", "0", "1"});
  }
  const auto replies = redis_.pipeline(cmds);
  for (std::size_t i = 0; i < queues.size(); ++i) {
    out[i].promote = !replies[3 * i].elements.empty();
    out[i].gangs = !replies[3 * i + 1].elements.empty();
    out[i].expired = !replies[3 * i + 2].elements.empty();
  }
  return out;
}

long long JobStore::repair_class_heads(const std::string& queue) {
  return redis_.eval("class_heads_repair", {keys::classes(queue), keys::ready_prefix(queue), keys::class_heads(queue)}, {})
      .integer;
}

Transition JobStore::checkpoint(const std::string& queue, const std::string& id, const std::string& worker_id,
                               const std::string& checkpoint_json, int max_count) {
  return transition_from(redis_.eval("checkpoint", {keys::job(queue, id), keys::events(queue)},
                                     {worker_id, checkpoint_json, std::to_string(max_count)}));
}

std::vector<std::vector<std::string>> budget_reads(const std::string& queue) {
  return {{"HMGET", keys::config(queue), "max_total_gpus", "max_concurrent_gpu_jobs", "max_total_gpu_memory_mb"},
          {"HMGET", keys::ledger(queue), "gpus", "gpu_jobs", "gpu_mem_mb"}};
}

BudgetUse budget_from(const RedisValue& limits, const RedisValue& ledger) {
  BudgetUse b;
  b.max_gpus = integer_of(limits.elements.at(0));
  b.max_jobs = integer_of(limits.elements.at(1));
  b.gpus_in_use = integer_of(ledger.elements.at(0)).value_or(0);
  b.gpu_jobs = integer_of(ledger.elements.at(1)).value_or(0);
  b.max_gpu_mem_mb = integer_of(limits.elements.at(2));
  b.gpu_mem_mb_in_use = integer_of(ledger.elements.at(2)).value_or(0);
  return b;
}

BudgetUse JobStore::budget(const std::string& queue) {
  const auto replies = redis_.pipeline(budget_reads(queue));
  return budget_from(replies[0], replies[1]);
}

std::vector<JobRecord> JobStore::dead_letter(const std::string& queue, int offset, int limit) {
  auto ids = redis_.command({"ZREVRANGE", keys::dead(queue), std::to_string(offset), std::to_string(offset + limit - 1)});
  std::vector<std::vector<std::string>> cmds;
  for (const auto& id : ids.elements) cmds.push_back({"HGETALL", keys::job(queue, id.str)});
  std::vector<JobRecord> out;
  if (cmds.empty()) return out;
  for (const auto& reply : redis_.pipeline(cmds))
    if (!reply.elements.empty()) out.push_back(JobRecord::from_flat_array(reply));
  return out;
}

long long JobStore::dead_letter_size(const std::string& queue) {
  return redis_.command({"ZCARD", keys::dead(queue)}).integer;
}

Transition JobStore::dead_letter_action(const std::string& queue, const std::string& id, const std::string& action) {
  return transition_from(redis_.eval("dead_letter",
                                     {keys::job(queue, id), keys::dead(queue), keys::ready_prefix(queue), keys::seq(queue),
                                      keys::events(queue), keys::class_heads(queue), keys::finished_prefix(queue), keys::log(queue, id)},
                                     {id, action}));
}

std::string JobStore::write_refusal() {
  try {
    redis_.command({"SET", keys::health_probe, std::to_string(time(nullptr)), "PX", "60000"});
    return {};
  } catch (const StoreUnavailable& e) {
    return e.what();
  }
}

void JobStore::forget(const std::string& id) {
  redis_.pipeline({{"HDEL", keys::job_directory, id}, {"HDEL", keys::workflow_job_ids, id}});
}

std::vector<std::pair<std::string, std::string>> JobStore::active_jobs(const std::string& queue) {
  auto ids = redis_.command({"ZRANGE", keys::active(queue), "0", "-1"});
  std::vector<std::vector<std::string>> cmds;
  for (const auto& id : ids.elements) cmds.push_back({"HGET", keys::job(queue, id.str), "worker_id"});
  std::vector<std::pair<std::string, std::string>> out;
  if (cmds.empty()) return out;
  auto replies = redis_.pipeline(cmds);
  for (std::size_t i = 0; i < replies.size(); ++i) out.emplace_back(ids.elements[i].str, replies[i].str);
  return out;
}

std::vector<std::string> JobStore::expired_active(const std::string& queue, std::int64_t now_ms, int limit) {
  auto v = redis_.command({"ZRANGEBYSCORE", keys::active(queue), "-inf", std::to_string(now_ms), "LIMIT", "0",
                           std::to_string(limit)});
  std::vector<std::string> out;
  for (const auto& e : v.elements) out.push_back(e.str);
  return out;
}

std::vector<std::string> JobStore::queues() {
  auto v = redis_.command({"HKEYS", keys::queue_directory});
  std::vector<std::string> out;
  for (const auto& e : v.elements) out.push_back(e.str);
  std::sort(out.begin(), out.end());
  return out;
}

std::size_t JobStore::queue_count() { return static_cast<std::size_t>(redis_.command({"HLEN", keys::queue_directory}).integer); }

bool JobStore::delete_queue_if_empty(const std::string& queue) {
  // The ready and diagnosis keys of each class are found by the script, from the
  // classes hash as it is when the script runs (delete_queue.lua). The seq stays: a
  // queue created again under the same name goes on from it, so no FIFO sequence
  // number repeats.
  const std::vector<std::string> ks{keys::classes(queue), keys::ready_prefix(queue), keys::active(queue),
                                    keys::delayed(queue), keys::dead(queue), keys::config(queue),
                                    keys::diagnosis(queue, ""), keys::classes_version(queue), keys::paused(queue),
                                    keys::stats(queue), keys::events(queue), keys::ledger(queue),
                                    keys::tenant_quotas(queue), keys::tenant_ledger(queue), keys::preempting(queue),
                                    keys::escalations(queue), keys::reservation_waits(queue), keys::class_heads(queue),
                                    keys::rate_window(queue), keys::expiring(queue), keys::finished(queue, "completed"),
                                    keys::finished(queue, "discarded"), keys::finished(queue, "cancelled"),
                                    keys::on_hold(queue), keys::usage(queue), keys::usage_totals(queue),
                                    keys::usage_hours(queue), keys::usage_journal(queue)};
  // Out of the directory first: a PUSH racing the delete re-adds it (reserve_id) and
  // then the script sees its job and refuses.
  redis_.command({"HDEL", keys::queue_directory, queue});
  const auto reply = redis_.eval("delete_queue", ks, {});
  if (reply.elements.at(0).str == "ok") return true;
  redis_.command(queue_directory_entry(queue));
  return false;
}

bool JobStore::queue_exists(const std::string& queue) {
  return redis_.command({"HEXISTS", keys::queue_directory, queue}).integer == 1;
}

void JobStore::register_queue(const std::string& queue) {
  redis_.command(queue_directory_entry(queue));
}

std::map<std::string, long long> JobStore::queue_counts(const std::string& queue) {
  const auto classes = load_classes(queue);
  std::vector<std::vector<std::string>> cmds;
  for (const auto& [id, _] : classes.classes) cmds.push_back({"ZCARD", keys::ready(queue, id)});
  cmds.push_back({"ZCARD", keys::active(queue)});
  cmds.push_back({"ZCARD", keys::dead(queue)});
  cmds.push_back({"ZCARD", keys::on_hold(queue)});  // held jobs (state pending)
  // The named counters only: the stats hash also holds the per-minute rollup (m<minute>:<what>).
  static const char* const kCounters[] = {"completed", "discarded", "cancelled", "preempted"};
  std::vector<std::string> hmget{"HMGET", keys::stats(queue)};
  hmget.insert(hmget.end(), std::begin(kCounters), std::end(kCounters));
  cmds.push_back(std::move(hmget));
  auto replies = redis_.pipeline(cmds);
  std::map<std::string, long long> counts;
  long long available = 0;
  std::size_t i = 0;
  for (; i < classes.classes.size(); ++i) available += replies[i].integer;
  counts["available"] = available;
  counts["active"] = replies[i++].integer;
  counts["dead_letter"] = replies[i++].integer;
  counts["pending"] = replies[i++].integer;
  const auto& stats = replies[i].elements;
  for (std::size_t s = 0; s < std::size(kCounters); ++s) {
    const bool set = s < stats.size() && !stats[s].is_nil();
    if (set || s < 3) counts[kCounters[s]] = set ? std::stoll(stats[s].str) : 0;  // preempted only once counted
  }
  // [admin] scheduled and retryable share the delayed index (ojs-admin-api.md §6.1 counts them apart).
  const auto [scheduled, retryable] = index().delayed_split(queue, kDelayedSplitScan);
  counts["scheduled"] = scheduled;
  counts["retryable"] = retryable;
  counts["delayed"] = scheduled + retryable;  // the name before issue 28, kept for one release
  return counts;
}

std::map<std::string, long long> JobStore::ready_counts(const std::string& queue, const ClassSet& classes) {
  std::vector<std::vector<std::string>> cmds;
  for (const auto& [id, _] : classes.classes) cmds.push_back({"ZCARD", keys::ready(queue, id)});
  std::map<std::string, long long> out;
  if (cmds.empty()) return out;
  auto replies = redis_.pipeline(cmds);
  std::size_t i = 0;
  for (const auto& [id, _] : classes.classes) out[id] = replies[i++].integer;
  return out;
}

bool JobStore::set_paused(const std::string& queue, bool paused) {
  // The value is when it was paused (ms): a second pause keeps the first time (NX).
  if (paused) redis_.command({"SET", keys::paused(queue), std::to_string(now_ms()), "NX"});
  else redis_.command({"DEL", keys::paused(queue)});
  return paused;
}

std::optional<std::int64_t> JobStore::paused_at(const std::string& queue) {
  const auto v = redis_.command({"GET", keys::paused(queue)});
  if (v.is_nil()) return std::nullopt;
  try {
    return std::stoll(v.str);
  } catch (const std::exception&) {
    return 0;  // paused by a broker that stored "1": the time is unknown
  }
}

bool JobStore::is_paused(const std::string& queue) {
  return redis_.command({"EXISTS", keys::paused(queue)}).integer == 1;
}

}  // namespace ojs::broker
