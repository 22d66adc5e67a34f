#include "broker/store/cron_store.hpp"

#include <stdexcept>

#include "broker/store/job_directory.hpp"
#include "broker/store/keys.hpp"
#include "ojs/core/job_states.hpp"

namespace ojs::broker {

namespace {
std::map<std::string, std::string> flat_map(const RedisValue& v) {
  std::map<std::string, std::string> out;
  for (std::size_t i = 0; i + 1 < v.elements.size(); i += 2) out[v.elements[i].str] = v.elements[i + 1].str;
  return out;
}

std::optional<std::int64_t> next_of(const std::map<std::string, std::string>& state) {
  const auto it = state.find("next_run_at");
  if (it == state.end() || it->second.empty()) return std::nullopt;
  return std::stoll(it->second);
}
}  // namespace

CronPut CronStore::put(const std::string& name, const std::string& definition, std::optional<std::int64_t> next_run_at_ms,
                       const std::string& tenant, const std::string& scope, long long max_total, long long max_per_tenant) {
  const auto reply = redis_.eval("cron_register",
                                 {keys::cron_registry, keys::cron_state(name), keys::cron_due, keys::cron_tenants, keys::cron_deferred},
                                 {"put", name, definition, optional_text(next_run_at_ms), tenant, scope, std::to_string(max_total),
                                  std::to_string(max_per_tenant)});
  CronPut out;
  const auto& word = reply.elements.at(0).str;
  if (word == "forbidden") {
    out.status = CronPut::Status::forbidden;
  } else if (word == "limit") {
    out.status = CronPut::Status::limit;
    out.limit = reply.elements.at(1).str;
    out.max = reply.elements.at(2).integer;
  } else {
    out.record = {definition, flat_map(reply.elements.at(1)), tenant};
  }
  return out;
}

bool CronStore::remove(const std::string& name, const std::string& scope) {
  return redis_.eval("cron_register",
                     {keys::cron_registry, keys::cron_state(name), keys::cron_due, keys::cron_tenants, keys::cron_deferred},
                     {"delete", name, "", "", "", scope, "0", "0"})
             .integer == 1;
}

std::optional<CronRecord> CronStore::get(const std::string& name) {
  const auto replies = redis_.pipeline({{"HGET", keys::cron_registry, name}, {"HGETALL", keys::cron_state(name)},
                                        {"HGET", keys::cron_tenants, name}});
  if (replies.at(0).is_nil()) return std::nullopt;
  return CronRecord{replies[0].str, flat_map(replies[1]), replies[2].is_nil() ? std::string() : replies[2].str};
}

std::map<std::string, CronRecord> CronStore::list(const std::string& scope) {
  const auto tenants = flat_map(redis_.command({"HGETALL", keys::cron_tenants}));
  std::map<std::string, CronRecord> out;
  for (const auto& [name, def] : flat_map(redis_.command({"HGETALL", keys::cron_registry}))) {
    const auto t = tenants.find(name);
    const std::string tenant = t == tenants.end() ? std::string() : t->second;
    if (scope.empty() || tenant == scope) out[name] = {def, {}, tenant};
  }
  std::vector<std::vector<std::string>> reads;  // the states in one round trip
  for (const auto& [name, _] : out) reads.push_back({"HGETALL", keys::cron_state(name)});
  if (reads.empty()) return out;
  const auto states = redis_.pipeline(reads);
  std::size_t i = 0;
  for (auto& [_, record] : out) record.state = flat_map(states.at(i++));
  return out;
}

CronsToTick CronStore::to_tick(std::int64_t now_ms, std::size_t limit) {
  const auto replies = redis_.pipeline({{"ZRANGEBYSCORE", keys::cron_due, "-inf", std::to_string(now_ms), "LIMIT", "0",
                                         std::to_string(limit)},
                                        {"SMEMBERS", keys::cron_deferred}});
  CronsToTick out;
  for (const auto& e : replies.at(0).elements) out.due.push_back(e.str);
  for (const auto& e : replies.at(1).elements) out.deferred.push_back(e.str);
  return out;
}

void CronStore::reindex(const std::string& name, std::optional<std::int64_t> next_run_at_ms) {
  if (next_run_at_ms) redis_.command({"ZADD", keys::cron_due, std::to_string(*next_run_at_ms), name});
  else redis_.command({"ZREM", keys::cron_due, name});
}

void CronStore::index_all() {
  for (const auto& [name, record] : list("")) {
    if (const auto next = next_of(record.state); next) redis_.command({"ZADD", keys::cron_due, "NX", std::to_string(*next), name});
    if (record.state.count("deferred")) redis_.command({"SADD", keys::cron_deferred, name});
  }
}

// Two steps in two slots: the tick's compare-and-set (global), then the PUSH (the
// job's queue). The previous run's state is read before: `skip` sees it at most
// one step late, as a broker reading it a moment earlier would.
// Two steps in two slots: the tick's compare-and-set (global), then the PUSH (the
// job's queue). The previous run's state is read before: `skip` and `enqueue` see
// it at most one step late, as a broker reading it a moment earlier would.
std::pair<std::string, std::string> CronStore::previous_run(const std::string& name) {
  const auto last = redis_.command({"HGET", keys::cron_state(name), "last_job"});
  if (!last.is_nil())
    if (const auto space = last.str.find(' '); space != std::string::npos) {
      const auto f = redis_.command({"HMGET", keys::job(last.str.substr(0, space), last.str.substr(space + 1)), "state", "id"});
      if (f.elements.size() == 2 && !f.elements[0].is_nil()) return {f.elements[1].str, f.elements[0].str};
    }
  return {};
}

bool CronStore::previous_run_finished(const std::string& name) {
  const auto state = previous_run(name).second;  // cron_fire.lua's is_terminal, on the same read
  return state.empty() || is_finished(state);
}

CronFire CronStore::fire(const std::string& name, std::int64_t tick_ms, std::int64_t following_ms, const std::string& overlap,
                         const BatchJob& job) {
  const auto state = keys::cron_state(name);
  const auto [previous_id, previous_state] = previous_run(name);
  const auto reply = redis_.eval("cron_fire", {state, keys::cron_due, keys::cron_deferred},
                                 {std::to_string(tick_ms), std::to_string(following_ms), overlap, previous_state,
                                  job.queue + " " + job.id, name});
  const auto& word = reply.elements.at(0).str;
  if (word == "stale") return CronFire::stale;
  if (word == "skipped") {
    emit(job.queue, "cron.skipped", previous_id, {"cron_name", name, "reason", "overlap_skip"});
    return CronFire::skipped;
  }
  if (word == "deferred") {
    emit(job.queue, "cron.deferred", previous_id, {"cron_name", name, "reason", "overlap_enqueue"});
    return CronFire::deferred;
  }
  JobStore jobs(redis_);
  if (!JobDirectory(redis_).reserve_id(job.id, job.queue) || jobs.push(job).status != TransitionStatus::ok) return CronFire::stale;
  emit(job.queue, "cron.triggered", job.id, {"cron_name", name, "scheduled_time", std::to_string(tick_ms)});
  return CronFire::fired;
}

CronFire CronStore::fire_deferred(const std::string& name, std::int64_t tick_ms, const BatchJob& job) {
  return fire(name, tick_ms, 0, "deferred", job);
}

void CronStore::emit(const std::string& queue, const std::string& type, const std::string& job_id,
                     std::vector<std::string> extra) {
  std::vector<std::string> args{type, job_id, queue};
  args.insert(args.end(), std::make_move_iterator(extra.begin()), std::make_move_iterator(extra.end()));
  redis_.eval("emit_event", {keys::events(queue)}, args);
}

bool CronStore::lead(const std::string& owner, std::int64_t ttl_ms) {
  return redis_.eval("lease", {keys::cron_leader}, {owner, std::to_string(ttl_ms)}).integer == 1;
}

}  // namespace ojs::broker
