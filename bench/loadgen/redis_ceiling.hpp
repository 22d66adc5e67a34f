// The Redis ceiling: how many minimal claims per second the broker's Redis can do
// at all. A claim here is one Lua script doing the least a claim must do (pop the
// head of a ready zset, mark the job hash active), run by hiredis connections with
// no HTTP, JSON or matching in the way. The broker's FETCH+ACK rate is reported as
// a fraction of it.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "common/stats.hpp"

namespace ojs::bench {

struct RedisTarget {
  std::string unix_path;  // non-empty: unix socket
  std::string host = "127.0.0.1";
  int port = 6379;
  int db = 0;
};

// Accepts "unix:///path", "/path/redis.sock", "redis://host:port[/db]", "host:port".
RedisTarget parse_redis_target(const std::string& url);

struct CeilingOptions {
  int connections = 4;       // one thread each
  int pipeline = 1;          // scripts in flight per connection
  long long ops = 200000;    // jobs seeded and then claimed
  double max_seconds = 20;   // stop claiming after this even if jobs remain
};

struct CeilingResult {
  long long claims = 0;
  double seconds = 0;
  double per_s = 0;
  Percentiles rtt_us;  // round trip of one pipeline batch
  double seed_seconds = 0;
  std::string error;   // non-empty: could not run
};

// Seeds `ops` members into a private zset (keys "ojs-bench:{ceiling}:*", never the
// broker's), claims them with the script, and deletes everything it created.
CeilingResult measure_claim_ceiling(const RedisTarget& target, const CeilingOptions& options);

// Redis work counters (INFO commandstats and INFO cpu) at one moment; the loadgen
// takes two snapshots around a phase and divides the difference by the jobs done.
struct RedisUsage {
  struct Command {
    long long calls = 0;
    long long usec = 0;
  };
  std::map<std::string, Command> commands;  // "evalsha", "hget", ... (INFO commandstats)
  double cpu_main_s = 0;                    // used_cpu_{user,sys}_main_thread: Redis's one command thread
  long long reads = 0;                      // total_reads_processed: read events, about one per round trip
  std::string error;                        // non-empty: could not read
};
RedisUsage read_redis_usage(const RedisTarget& target);

}  // namespace ojs::bench
