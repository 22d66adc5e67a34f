// Job logs in Redis: one stream per job (keys.hpp log), appended by
// log_append.lua within a byte bound, read by cursor. Deleted with the job.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "broker/store/job_store.hpp"
#include "broker/store/redis_client.hpp"

namespace ojs::broker {

struct LogEntry {
  std::string id;      // the stream id "<ms>-<seq>": the cursor
  std::string stream;  // stdout | stderr | notice
  std::string data;
};

struct LogAppendOutcome {
  TransitionStatus status = TransitionStatus::ok;  // ok, not_found, conflict (holder: the worker holding the job)
  std::string holder;
  long long bytes = 0, dropped = 0;
};

// A job's log page and what the job is now.
struct LogPage {
  std::vector<LogEntry> entries;
  std::string state;       // "" = no such job
  long long dropped = 0;   // bytes gone to the bound
};

class LogStore {
 public:
  explicit LogStore(RedisPool& redis) : redis_(redis) {}
  LogAppendOutcome append(const std::string& queue, const std::string& id, const std::string& worker_id, long long max_bytes,
                          long long skipped,
                          const std::vector<std::pair<std::string, std::string>>& chunks);
  // Entries after `after` ("" = from the first), at most `count`, oldest first, with the
  // job's state and dropped bytes: one round trip. The state is read first: a job seen
  // finished has every chunk its worker sent before reporting in the entries read after.
  LogPage read(const std::string& queue, const std::string& id, const std::string& after, int count);
  // The same, newest first: entries before `before` ("" = from the newest) and after
  // `after` ("" = back to the first), at most `count`.
  LogPage read_back(const std::string& queue, const std::string& id, const std::string& before, const std::string& after,
                    int count);

 private:
  RedisPool& redis_;
};

}  // namespace ojs::broker
