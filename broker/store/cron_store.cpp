#include "broker/store/cron_store.hpp"

#include <stdexcept>

#include "broker/store/keys.hpp"

namespace ojs::broker {

namespace {
std::map<std::string, std::string> flat_map(const RedisValue& v) {
  std::map<std::string, std::string> out;
  for (std::size_t i = 0; i + 1 < v.elements.size(); i += 2) out[v.elements[i].str] = v.elements[i + 1].str;
  return out;
}
}  // namespace

CronRecord CronStore::put(const std::string& name, const std::string& definition, std::optional<std::int64_t> next_run_at_ms) {
  auto reply = redis_.eval("cron_register", {keys::cron_registry, keys::cron_state(name)},
                           {"put", name, definition, optional_text(next_run_at_ms)});
  return {definition, flat_map(reply)};
}

bool CronStore::remove(const std::string& name) {
  return redis_.eval("cron_register", {keys::cron_registry, keys::cron_state(name)}, {"delete", name, "", ""}).integer == 1;
}

std::map<std::string, std::string> CronStore::state_of(const std::string& name) {
  return flat_map(redis_.command({"HGETALL", keys::cron_state(name)}));
}

std::optional<CronRecord> CronStore::get(const std::string& name) {
  auto def = redis_.command({"HGET", keys::cron_registry, name});
  if (def.is_nil()) return std::nullopt;
  return CronRecord{def.str, state_of(name)};
}

std::map<std::string, CronRecord> CronStore::list() {
  std::map<std::string, CronRecord> out;
  for (const auto& [name, def] : flat_map(redis_.command({"HGETALL", keys::cron_registry}))) out[name] = {def, state_of(name)};
  return out;
}

// Two steps in two slots: the tick's compare-and-set (global), then the PUSH (the
// job's queue). The previous run's state is read before: `skip` sees it at most
// one step late, as a broker reading it a moment earlier would.
// Two steps in two slots: the tick's compare-and-set (global), then the PUSH (the
// job's queue). The previous run's state is read before: `skip` and `enqueue` see
// it at most one step late, as a broker reading it a moment earlier would.
CronFire CronStore::fire(const std::string& name, std::int64_t tick_ms, std::int64_t following_ms, const std::string& overlap,
                         const BatchJob& job) {
  const auto state = keys::cron_state(name);
  std::string previous_id, previous_state;
  const auto last = redis_.command({"HGET", state, "last_job"});
  if (!last.is_nil())
    if (const auto space = last.str.find(' '); space != std::string::npos) {
      const auto f = redis_.command({"HMGET", keys::job(last.str.substr(0, space), last.str.substr(space + 1)), "state", "id"});
      if (f.elements.size() == 2 && !f.elements[0].is_nil()) {
        previous_state = f.elements[0].str;
        previous_id = f.elements[1].str;
      }
    }
  const auto reply = redis_.eval("cron_fire", {state},
                                 {std::to_string(tick_ms), std::to_string(following_ms), overlap, previous_state,
                                  job.queue + " " + job.id});
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
  if (!jobs.reserve_id(job.id, job.queue) || jobs.push(job).status != TransitionStatus::ok) return CronFire::stale;
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
