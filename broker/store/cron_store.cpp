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

CronFire CronStore::fire(const std::string& name, std::int64_t tick_ms, std::int64_t following_ms, const std::string& overlap,
                         const BatchJob& job) {
  const auto state = keys::cron_state(name);
  std::string previous = state;
  const auto last = redis_.command({"HGET", state, "last_job"});
  if (!last.is_nil())
    if (const auto space = last.str.find(' '); space != std::string::npos)
      previous = keys::job(last.str.substr(0, space), last.str.substr(space + 1));
  std::vector<std::string> k{state, keys::job_directory, keys::queue_directory, keys::job(job.queue, job.id),
                             keys::ready(job.queue, job.class_id), keys::delayed(job.queue), keys::seq(job.queue),
                             keys::events(job.queue), keys::classes(job.queue), keys::classes_version(job.queue), previous,
                             keys::escalations(job.queue), keys::reservation_waits(job.queue)};
  std::vector<std::string> args{std::to_string(tick_ms), std::to_string(following_ms), overlap, name, job.id, job.queue,
                                job.class_id, job.class_json, rank_text(job.rank_base),
                                optional_text(job.escalate_after_ms), optional_text(job.reservation_timeout_ms)};
  append_fields(args, job.fields);
  const auto reply = redis_.eval("cron_fire", k, args);
  const auto& word = reply.elements.at(0).str;
  if (word == "ok") return CronFire::fired;
  if (word == "skipped") return CronFire::skipped;
  if (word == "deferred") return CronFire::deferred;
  return CronFire::stale;
}

CronFire CronStore::fire_deferred(const std::string& name, std::int64_t tick_ms, const BatchJob& job) {
  return fire(name, tick_ms, 0, "deferred", job);
}

bool CronStore::lead(const std::string& owner, std::int64_t ttl_ms) {
  return redis_.eval("lease", {keys::cron_leader}, {owner, std::to_string(ttl_ms)}).integer == 1;
}

}  // namespace ojs::broker
