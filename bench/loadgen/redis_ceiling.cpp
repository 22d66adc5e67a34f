#include "loadgen/redis_ceiling.hpp"

#include <hiredis/hiredis.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

namespace ojs::bench {

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kZset = "ojs-bench:{ceiling}:ready";
constexpr const char* kJobPrefix = "ojs-bench:{ceiling}:job:";
// The least a claim does: pop the best ready job, mark it active for this worker.
constexpr const char* kClaimScript =
    "local p = redis.call('ZPOPMIN', KEYS[1]) "
    "if not p[1] then return false end "
    "redis.call('HSET', ARGV[1] .. p[1], 'state', 'active', 'worker_id', ARGV[2], 'started_at', ARGV[3]) "
    "return p[1]";

struct ContextDeleter {
  void operator()(redisContext* c) const { redisFree(c); }
};
using Context = std::unique_ptr<redisContext, ContextDeleter>;
struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

Context connect(const RedisTarget& t) {
  timeval timeout{10, 0};
  Context c(t.unix_path.empty() ? redisConnectWithTimeout(t.host.c_str(), t.port, timeout)
                                : redisConnectUnixWithTimeout(t.unix_path.c_str(), timeout));
  if (!c || c->err) throw std::runtime_error("redis connect: " + std::string(c ? c->errstr : "out of memory"));
  if (t.db != 0) Reply(static_cast<redisReply*>(redisCommand(c.get(), "SELECT %d", t.db)));
  return c;
}

Reply next_reply(redisContext* c) {
  void* r = nullptr;
  if (redisGetReply(c, &r) != REDIS_OK || !r) throw std::runtime_error("redis: " + std::string(c->errstr));
  Reply reply(static_cast<redisReply*>(r));
  if (reply->type == REDIS_REPLY_ERROR) throw std::runtime_error("redis: " + std::string(reply->str, reply->len));
  return reply;
}

// Appends `count` commands built by `make(i)` and reads their replies, in batches.
template <class Make>
void pipelined(redisContext* c, long long count, Make make, int batch = 1000) {
  for (long long start = 0; start < count; start += batch) {
    const long long end = std::min(count, start + batch);
    for (long long i = start; i < end; ++i) make(i);
    for (long long i = start; i < end; ++i) next_reply(c);
  }
}

}  // namespace

RedisTarget parse_redis_target(const std::string& url) {
  RedisTarget t;
  std::string rest = url;
  if (rest.rfind("unix://", 0) == 0) {
    t.unix_path = rest.substr(7);
    return t;
  }
  if (!rest.empty() && rest[0] == '/') {
    t.unix_path = rest;
    return t;
  }
  if (rest.rfind("redis://", 0) == 0) rest = rest.substr(8);
  if (auto at = rest.find('@'); at != std::string::npos) rest = rest.substr(at + 1);  // no AUTH support: loopback bench
  if (auto slash = rest.find('/'); slash != std::string::npos) {
    const auto db = rest.substr(slash + 1);
    if (!db.empty()) t.db = std::stoi(db);
    rest = rest.substr(0, slash);
  }
  if (auto colon = rest.rfind(':'); colon != std::string::npos) {
    t.port = std::stoi(rest.substr(colon + 1));
    rest = rest.substr(0, colon);
  }
  if (!rest.empty()) t.host = rest;
  return t;
}

RedisUsage read_redis_usage(const RedisTarget& target) {
  RedisUsage usage;
  try {
    Context c = connect(target);
    for (const char* section : {"commandstats", "cpu", "stats"}) {
      Reply r(static_cast<redisReply*>(redisCommand(c.get(), "INFO %s", section)));
      if (!r || r->type != REDIS_REPLY_STRING) throw std::runtime_error(std::string("redis: INFO ") + section + " failed");
      std::istringstream in(std::string(r->str, r->len));
      // cmdstat_hget:calls=3,usec=12,usec_per_call=4.00,...   used_cpu_sys_main_thread:0.01
      for (std::string line; std::getline(in, line);) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        const auto colon = line.find(':');
        if (colon == std::string::npos) continue;
        const std::string name = line.substr(0, colon), value = line.substr(colon + 1);
        if (name.rfind("cmdstat_", 0) == 0) {
          RedisUsage::Command cmd;
          std::sscanf(value.c_str(), "calls=%lld,usec=%lld", &cmd.calls, &cmd.usec);
          usage.commands[name.substr(8)] = cmd;
        } else if (name == "used_cpu_sys_main_thread" || name == "used_cpu_user_main_thread") {
          usage.cpu_main_s += std::stod(value);
        } else if (name == "total_reads_processed") {
          usage.reads = std::stoll(value);
        }
      }
    }
  } catch (const std::exception& e) {
    usage.error = e.what();
  }
  return usage;
}

CeilingResult measure_claim_ceiling(const RedisTarget& target, const CeilingOptions& options) {
  CeilingResult result;
  try {
    Context admin = connect(target);
    Reply(static_cast<redisReply*>(redisCommand(admin.get(), "DEL %s", kZset)));
    const auto seed_start = Clock::now();
    constexpr long long kPerZadd = 500;
    const long long zadds = (options.ops + kPerZadd - 1) / kPerZadd;
    pipelined(admin.get(), zadds, [&](long long b) {
      std::vector<std::string> args{"ZADD", kZset};
      for (long long i = b * kPerZadd; i < std::min(options.ops, (b + 1) * kPerZadd); ++i) {
        args.push_back(std::to_string(i));
        args.push_back("j" + std::to_string(i));
      }
      std::vector<const char*> argv;
      std::vector<size_t> lens;
      for (const auto& a : args) {
        argv.push_back(a.data());
        lens.push_back(a.size());
      }
      redisAppendCommandArgv(admin.get(), static_cast<int>(argv.size()), argv.data(), lens.data());
    }, 50);
    result.seed_seconds = std::chrono::duration<double>(Clock::now() - seed_start).count();
    // Still EVALSHA (the broker uses FCALL): the ceiling stays comparable with every earlier
    // run; a one-line script has no prelude, so FCALL would save it little (bench/lua-profile.py).
    Reply loaded(static_cast<redisReply*>(redisCommand(admin.get(), "SCRIPT LOAD %s", kClaimScript)));
    if (!loaded || loaded->type != REDIS_REPLY_STRING) throw std::runtime_error("redis: SCRIPT LOAD failed");
    const std::string sha(loaded->str, loaded->len);

    std::atomic<long long> claims{0};
    std::atomic<bool> failed{false};
    std::string first_error;
    std::vector<std::vector<std::int64_t>> rtts(options.connections);
    const auto start = Clock::now();
    const auto deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.max_seconds));
    std::vector<std::thread> threads;
    for (int t = 0; t < options.connections; ++t) {
      threads.emplace_back([&, t] {
        try {
          Context c = connect(target);
          const std::string worker = "ceiling-" + std::to_string(t);
          bool empty = false;
          while (!empty && !failed && Clock::now() < deadline) {
            const auto sent = Clock::now();
            const std::string now = std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                       std::chrono::system_clock::now().time_since_epoch()).count());
            for (int i = 0; i < options.pipeline; ++i)
              redisAppendCommand(c.get(), "EVALSHA %s 1 %s %s %s %s", sha.c_str(), kZset, kJobPrefix, worker.c_str(), now.c_str());
            long long got = 0;
            for (int i = 0; i < options.pipeline; ++i) {
              Reply r = next_reply(c.get());
              if (r->type == REDIS_REPLY_NIL) empty = true;
              else ++got;
            }
            rtts[t].push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - sent).count());
            claims += got;
          }
        } catch (const std::exception& e) {
          if (!failed.exchange(true)) first_error = e.what();
        }
      });
    }
    for (auto& th : threads) th.join();
    result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    result.claims = claims;
    result.per_s = result.seconds > 0 ? static_cast<double>(result.claims) / result.seconds : 0;
    std::vector<std::int64_t> all;
    for (auto& v : rtts) all.insert(all.end(), v.begin(), v.end());
    result.rtt_us = percentiles(all, 1e-3);
    if (failed) result.error = first_error;

    // Leave nothing behind.
    Reply(static_cast<redisReply*>(redisCommand(admin.get(), "DEL %s", kZset)));
    pipelined(admin.get(), options.ops, [&](long long i) {
      const std::string key = kJobPrefix + std::string("j") + std::to_string(i);
      redisAppendCommand(admin.get(), "UNLINK %s", key.c_str());
    });
  } catch (const std::exception& e) {
    result.error = e.what();
  }
  return result;
}

}  // namespace ojs::bench
