// The maintenance loop's writes to each queue: promotion of due jobs, the
// expires_at sweep, forming gangs past their hold, the class-head repair, and the
// one cheap read that says which of them have something to do.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "broker/store/redis_client.hpp"

namespace ojs::broker {

class UpkeepStore {
 public:
  explicit UpkeepStore(RedisPool& redis) : redis_(redis) {}

  // promote.lua: due scheduled jobs and retries become available (those already past
  // their expires_at are discarded instead).
  long long promote(const std::string& queue);
  // expire_sweep.lua: up to `limit` entries of the queue's expiring index past due;
  // their jobs that still wait are discarded (error code `expired`).
  struct ExpirySweep {
    long long handled = 0;
    long long discarded = 0;
  };
  ExpirySweep sweep_expired(const std::string& queue, int limit);
  // gang_expire.lua: forming gangs past their hold deadline release their members.
  long long expire_gangs(const std::string& queue);
  // Which queues have a scheduled job or retry due, a forming gang past its hold
  // deadline, or a job past its expires_at (now_ms on the broker's clock, as
  // reclaim uses), in one pipeline of cheap reads: promote / expire_gangs /
  // sweep_expired run only where something is due (each script call costs Redis
  // ~40k instructions even when nothing is).
  struct DueWork {
    bool promote = false;
    bool gangs = false;
    bool expired = false;
  };
  std::vector<DueWork> due_work(const std::vector<std::string>& queues, std::int64_t now_ms);
  // Makes the queue's class-head index match its ready sets; returns the entries corrected.
  long long repair_class_heads(const std::string& queue);

 private:
  RedisPool& redis_;
};

}  // namespace ojs::broker
