// Cron registrations and ticks in Redis (cron_register.lua, cron_fire.lua).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "broker/store/job_store.hpp"
#include "broker/store/redis_client.hpp"

namespace ojs::broker {

struct CronRecord {
  std::string definition;                  // JSON as registered
  std::map<std::string, std::string> state;  // next_run_at, last_run_at, run_count, last_job (ms / text)
};

enum class CronFire { fired, skipped, deferred, stale };

class CronStore {
 public:
  explicit CronStore(RedisPool& redis) : redis_(redis) {}
  CronRecord put(const std::string& name, const std::string& definition, std::optional<std::int64_t> next_run_at_ms);
  bool remove(const std::string& name);
  std::optional<CronRecord> get(const std::string& name);
  std::map<std::string, CronRecord> list();
  // Enqueues `job` for the tick `tick_ms` unless another broker did (stale) or the
  // overlap policy skips or defers it; the cron's next_run_at becomes `following_ms` either way.
  CronFire fire(const std::string& name, std::int64_t tick_ms, std::int64_t following_ms, const std::string& overlap,
                const BatchJob& job);
  // The enqueue policy's turn: enqueues `job` for the oldest deferred tick `tick_ms`
  // once the previous run has finished (fired), else stale.
  CronFire fire_deferred(const std::string& name, std::int64_t tick_ms, const BatchJob& job);
  bool lead(const std::string& owner, std::int64_t ttl_ms);  // the ticker's leader lease

 private:
  RedisPool& redis_;
  std::map<std::string, std::string> state_of(const std::string& name);
};

}  // namespace ojs::broker
