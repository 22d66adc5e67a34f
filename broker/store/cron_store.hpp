// Cron registrations and ticks in Redis (cron_register.lua, cron_fire.lua, emit_event.lua).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "broker/store/job_store.hpp"
#include "broker/store/redis_client.hpp"

namespace ojs::broker {

struct CronRecord {
  std::string definition;                  // JSON as registered
  std::map<std::string, std::string> state;  // next_run_at, last_run_at, run_count, last_job (ms / text)
  std::string tenant;                      // the tenant its ticks push for ("" = none)
};

enum class CronFire { fired, skipped, deferred, stale };

// What a registration decided (cron_register.lua).
struct CronPut {
  enum class Status { ok, forbidden, limit } status = Status::ok;  // forbidden: the name is another tenant's
  CronRecord record;
  std::string limit;  // max_crons | max_crons_per_tenant
  long long max = 0;
};

// The crons a ticker pass looks at: those due by now, and those with deferred ticks.
struct CronsToTick {
  std::vector<std::string> due;
  std::vector<std::string> deferred;
};

class CronStore {
 public:
  explicit CronStore(RedisPool& redis) : redis_(redis) {}
  // `scope`: the caller's tenant ("" = any): another tenant's cron is neither
  // replaced nor removed. A new cron counts against the caps (0 = none).
  CronPut put(const std::string& name, const std::string& definition, std::optional<std::int64_t> next_run_at_ms,
              const std::string& tenant, const std::string& scope, long long max_total, long long max_per_tenant);
  bool remove(const std::string& name, const std::string& scope);
  std::optional<CronRecord> get(const std::string& name);
  // Every cron of `scope`'s tenant ("" = every cron), in name order.
  std::map<std::string, CronRecord> list(const std::string& scope);
  // At most `limit` crons due by `now_ms`, and every cron with deferred ticks.
  CronsToTick to_tick(std::int64_t now_ms, std::size_t limit);
  // The due index says `name` is due at `next_run_at_ms` (nullopt: never): a repair
  // when the index disagrees with the cron's state.
  void reindex(const std::string& name, std::optional<std::int64_t> next_run_at_ms);
  // Indexes crons registered before the due index existed (once per broker start).
  void index_all();
  // Enqueues `job` for the tick `tick_ms` unless another broker did (stale) or the
  // overlap policy skips or defers it; the cron's next_run_at becomes `following_ms` either way.
  CronFire fire(const std::string& name, std::int64_t tick_ms, std::int64_t following_ms, const std::string& overlap,
                const BatchJob& job);
  // The enqueue policy's turn: enqueues `job` for the oldest deferred tick `tick_ms`
  // once the previous run has finished (fired), else stale.
  CronFire fire_deferred(const std::string& name, std::int64_t tick_ms, const BatchJob& job);
  bool lead(const std::string& owner, std::int64_t ttl_ms);  // the ticker's leader lease
  // The cron's last run has ended (or there is none): what the overlap policies ask.
  bool previous_run_finished(const std::string& name);

 private:
  RedisPool& redis_;
  // The last run's id and state as read now ("" when none or gone).
  std::pair<std::string, std::string> previous_run(const std::string& name);
  // A cron event in the queue's stream (emit_event.lua: the --events bound applies).
  void emit(const std::string& queue, const std::string& type, const std::string& job_id, std::vector<std::string> extra);
};

}  // namespace ojs::broker
