// The fold of a queue's usage journal (_lib_accounting.lua usage_fold), run by
// a real Redis on lines written as usage_ended writes them: the totals and the hourly
// rollup are the exact integer sums, the decayed use is what adding each attempt's
// use at its own end gives (decay, add, decay, add...; the use as it accrued over the
// run, each second decayed from when it was used), and held amounts leave
// <tenant>|run. Folding in several calls gives the same as folding in one. Running
// attempts' use counts as it accrues (usage_started, usage_run_at); an end takes its
// amounts out of the held use at once (usage_ended) and its use moves to the
// decayed use at the fold, so the fair order, reading without a fold
// (scheduling/fair_order.cpp fair_use_of, used here), sees the same use before and
// after either.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "broker/scheduling/fair_order.hpp"
#include "support/processes.hpp"

using namespace ojs::test;

namespace {

// Folds at most `limit` lines of the journal q:journal; returns how many.
long long fold(const RedisServer& redis, int limit) {
  const std::string body = "per_call = {}\nreturn usage_fold({journal = 'q:journal', usage = 'q:usage', totals = 'q:totals', "
                           "hours = 'q:hours', config = 'q:config'}, " + std::to_string(limit) + ")";
  return std::stoll(redis_lines(redis, {"EVAL", lua_source("_lib.lua") + "\n" + lua_source("_lib_accounting.lua") + "\n" + body, "0"}).at(0));
}

// Runs `body` (Lua, after _lib.lua and _lib_accounting.lua) and returns its reply.
std::vector<std::string> eval(const RedisServer& redis, const std::string& body) {
  return redis_lines(redis, {"EVAL", lua_source("_lib.lua") + "\n" + lua_source("_lib_accounting.lua") + "\nper_call = {}\n" + body, "0"});
}

std::map<std::string, std::string> hash(const RedisServer& redis, const std::string& key) {
  std::map<std::string, std::string> out;
  const auto flat = redis_lines(redis, {"HGETALL", key});
  for (std::size_t i = 0; i + 1 < flat.size(); i += 2) out[flat[i]] = flat[i + 1];
  return out;
}

std::vector<double> numbers(const std::string& text) {
  std::vector<double> out;
  std::istringstream in(text);
  for (double x; in >> x;) out.push_back(x);
  return out;
}

// A journal line as usage_ended writes it. held: '0' nothing held in the usage hash,
// '2' its amounts were freed at its end (this broker), '1' the fold frees them (a
// line written by an earlier broker).
struct End {
  long long at_ms, dur_us;
  char held;
  double gpu, cpu, mem_mb, gpu_mem_mb;
  std::string tenant, type, worker;
  std::string line() const {
    std::ostringstream s;
    s << at_ms << '\t' << dur_us << '\t' << held << '\t' << gpu << '\t' << cpu << '\t' << mem_mb << '\t' << gpu_mem_mb
      << '\t' << tenant << '\t' << type << '\t' << worker;
    return s.str();
  }
};

}  // namespace

TEST(UsageFold, EqualsAddingEachEndAtItsOwnTime) {
  RedisServer redis;
  constexpr long long kHalfLifeMs = 3600000;  // long enough that an hour leaves half of what was used
  constexpr long long kHour = 3600000;
  const long long t0 = 1764000000000;  // a whole hour: the last end falls in the next one
  redis_lines(redis, {"HSET", "q:config", "usage_half_life_ms", std::to_string(kHalfLifeMs)});
  // team-a used 100 GPU-seconds and 50 CPU-seconds by t0 - 30 s, and holds 2 GPUs and 2 CPUs.
  redis_lines(redis, {"HSET", "q:usage", "team-a", std::to_string(t0 - 30000) + " 100 50 0 0", "team-a|run", "2 2 0 0",
                      "*", std::to_string(t0 - 30000) + " 100 50 0 0", "*|run", "2 2 0 0"});
  const std::vector<End> ends = {
      {t0 + 1000, 4000000, '1', 1, 1, 0, 0, "team-a", "train", "w1"},
      {t0 + 20000, 2500000, '0', 0, 0.5, 1024, 0, "team-b", "etl", "w2"},
      {t0 + kHour + 5000, 1000000, '1', 1, 1, 0, 40960, "team-a", "train", "w1"},
      {t0 + kHour + 9000, 3000000, '0', 0, 0.5, 0, 0, "team-b", "etl", "w2"},
  };
  for (const auto& e : ends) redis_lines(redis, {"RPUSH", "q:journal", e.line()});

  // Folded in two calls: three lines (across the hour), then the last; then nothing is left.
  EXPECT_EQ(fold(redis, 3), 3);
  EXPECT_EQ(fold(redis, 3), 1);
  EXPECT_EQ(fold(redis, 3), 0);
  EXPECT_EQ(redis_lines(redis, {"LLEN", "q:journal"}).at(0), "0");

  // What adding each end in turn gives.
  std::map<std::string, std::vector<double>> used = {{"team-a", {double(t0 - 30000), 100, 50, 0, 0}},
                                                     {"*", {double(t0 - 30000), 100, 50, 0, 0}}};
  std::map<std::string, std::vector<double>> held = {{"team-a", {2, 2, 0, 0}}, {"*", {2, 2, 0, 0}}};
  std::map<std::string, long long> totals, hours;
  const char* resources[] = {"gpu", "cpu", "memory_mb", "gpu_memory_mb"};
  for (const auto& e : ends) {
    const double amounts[] = {e.gpu, e.cpu, e.mem_mb, e.gpu_mem_mb};
    for (const std::string& name : {e.tenant, std::string("*")}) {
      auto& v = used[name];
      if (v.empty()) v = {0, 0, 0, 0, 0};
      const double f = std::pow(2.0, -(double(e.at_ms) - v[0]) / kHalfLifeMs);
      // The use as it accrued over the run, decayed to its end.
      const double hl_s = kHalfLifeMs / 1000.0, accrued = hl_s / std::log(2.0) * (1 - std::pow(2.0, -double(e.dur_us) / 1e6 / hl_s));
      for (int i = 1; i <= 4; ++i) v[i] = v[i] * f + amounts[i - 1] * accrued;
      v[0] = double(e.at_ms);
      auto& r = held[name];
      if (r.empty()) r = {0, 0, 0, 0};
      if (e.held == '1')
        for (int i = 0; i < 4; ++i) r[i] = std::max(r[i] - amounts[i], 0.0);
    }
    for (int i = 0; i < 4; ++i) {
      const auto n = static_cast<long long>(std::floor(amounts[i] * double(e.dur_us)));
      if (n <= 0) continue;
      totals[e.tenant + "\t" + resources[i]] += n;
      hours[std::to_string(e.at_ms / kHour) + "\t" + e.tenant + "\t" + e.type + "\t" + e.worker + "\t" + resources[i]] += n;
    }
  }

  std::map<std::string, long long> got_totals, got_hours;
  for (const auto& [k, v] : hash(redis, "q:totals")) got_totals[k] = std::stoll(v);
  for (const auto& [k, v] : hash(redis, "q:hours")) got_hours[k] = std::stoll(v);
  EXPECT_EQ(got_totals, totals);
  EXPECT_EQ(got_hours, hours);
  EXPECT_EQ(got_hours.size(), 8u);  // per hour: team-a's resources used (2, then 3), team-b's (2, then 1)

  const auto usage = hash(redis, "q:usage");
  for (const auto& [name, want] : used) {
    ASSERT_TRUE(usage.count(name)) << name;
    const auto got = numbers(usage.at(name));
    ASSERT_EQ(got.size(), 5u) << usage.at(name);
    EXPECT_EQ(got[0], want[0]) << name;  // decayed to the last end's time
    for (int i = 1; i <= 4; ++i) EXPECT_NEAR(got[i], want[i], 1e-9 * std::max(1.0, want[i])) << name << " resource " << i;
  }
  for (const auto& [name, want] : held) {
    const auto got = numbers(usage.at(name + "|run"));
    ASSERT_EQ(got.size(), 7u) << name;  // held, then the running use (UsageRunning)
    for (int i = 0; i < 4; ++i) EXPECT_EQ(got[i], want[i]) << name << " held " << i;
  }
}

// A line usage_ended never writes (a hand edit, a torn write by another tool) is
// dropped, and the lines around it are folded.
TEST(UsageFold, AMalformedLineIsDroppedAndTheOthersCount) {
  RedisServer redis;
  redis_lines(redis, {"RPUSH", "q:journal", "not a line", "1764000000000\t1000000\t0\t1\t1\t0\t0\tteam-a\ttrain\tw1"});
  EXPECT_EQ(fold(redis, 10), 2);
  const auto totals = hash(redis, "q:totals");
  EXPECT_EQ(totals.at("team-a\tgpu"), "1000000");
  EXPECT_EQ(totals.at("team-a\tcpu"), "1000000");
}

namespace {

// A claim of `tenant`'s attempt holding `gpus` GPUs (and 1 CPU) at `at_ms` under `fair`.
void started(const RedisServer& redis, const std::string& tenant, double gpus, long long at_ms, long long half_life_ms) {
  std::ostringstream body;
  body << "usage_started('q:usage', {tenant = '" << tenant << "'}, {" << gpus << ", 1, 0, 0}, {}, " << at_ms << ", " << half_life_ms
       << ")\nreturn 1";
  eval(redis, body.str());
}

// The GPU use (resource-seconds) and GPUs held that the fair order sees for `name` at
// `now_ms`: the usage hash as stored, read by the broker's C++ (no fold first).
std::pair<double, double> view(const RedisServer& redis, const std::string& name, long long now_ms, long long half_life_ms) {
  const auto v = eval(redis, "local v = redis.call('HMGET', 'q:usage', '" + name + "', '" + name + "|run')\n"
                             "return {v[1] or '-', v[2] or '-'}");
  const auto raw = [](const std::string& x) { return x == "-" ? std::string() : x; };
  const auto use = ojs::broker::fair_use_of({name, raw(v.at(0)), raw(v.at(1))}, now_ms, half_life_ms);
  return {use.used[0], use.held[0]};
}

// The end of `tenant`'s attempt holding `gpus` GPUs (and 1 CPU), claimed under `fair`
// at `started_ms`, as ack/fail/cancel end it (usage_ended), at Redis's time now;
// returns that time (ms).
long long ended(const RedisServer& redis, const std::string& tenant, double gpus, long long started_ms, long long half_life_ms) {
  std::ostringstream body;
  body << "local now = now_ms()\n"
       << "local job = {tenant = '" << tenant << "', charged_gpus = '" << gpus << "', cpus = '1', started_at = '" << started_ms
       << "', started_us = '" << started_ms * 1000 << "', usage_run = 'h" << half_life_ms << "', type = 'train', worker_id = 'w1'}\n"
       << "usage_ended({journal = 'q:journal', usage = 'q:usage'}, 'q:job', job, now)\nreturn now";
  return std::stoll(eval(redis, body.str()).at(0));
}

// Redis's clock, ms.
long long redis_now_ms(const RedisServer& redis) {
  const auto t = redis_lines(redis, {"TIME"});
  return std::stoll(t.at(0)) * 1000 + std::stoll(t.at(1)) / 1000;
}

// The running use is kept in whole resource-microseconds, rounded at each write.
constexpr double kMicro = 1e-5;

// What `gpus` GPUs used from `from_ms` to `to_ms`, each second decayed to `now_ms`.
double accrued(double gpus, long long from_ms, long long to_ms, long long now_ms, long long half_life_ms) {
  const double hl = half_life_ms / 1000.0, k = hl / std::log(2.0);
  return gpus * k * (std::pow(2.0, -(now_ms - to_ms) / 1000.0 / hl) - std::pow(2.0, -(now_ms - from_ms) / 1000.0 / hl));
}

}  // namespace

// Two running attempts count what they used so far, each from its own start; when
// one ends (a line an earlier broker wrote: held '1', freed by the fold), the fold
// moves its use from the running sum to the decayed use: the sum the fair order sees
// is the same just before and just after, and afterwards only the other keeps accruing.
TEST(UsageRunning, RunningAttemptsCountAsTheyAccrueAndOnceAfterTheirEnd) {
  RedisServer redis;
  constexpr long long kHalfLifeMs = 600000;
  const long long t0 = 1764000000000;
  redis_lines(redis, {"HSET", "q:config", "usage_half_life_ms", std::to_string(kHalfLifeMs)});
  started(redis, "team-a", 2, t0, kHalfLifeMs);
  started(redis, "team-b", 1, t0 + 60000, kHalfLifeMs);
  started(redis, "team-a", 1, t0 + 300000, kHalfLifeMs);

  const long long now = t0 + 900000;  // 1.5 half-lives after the first start
  const double a = accrued(2, t0, now, now, kHalfLifeMs) + accrued(1, t0 + 300000, now, now, kHalfLifeMs);
  const double b = accrued(1, t0 + 60000, now, now, kHalfLifeMs);
  auto [a_used, a_held] = view(redis, "team-a", now, kHalfLifeMs);
  EXPECT_NEAR(a_used, a, kMicro);
  EXPECT_EQ(a_held, 3);
  EXPECT_NEAR(view(redis, "team-b", now, kHalfLifeMs).first, b, kMicro);
  EXPECT_NEAR(view(redis, "*", now, kHalfLifeMs).first, a + b, kMicro);

  // team-a's first attempt ends at `end`, journaled as usage_ended writes it, and is folded.
  const long long end = t0 + 1200000;
  const auto before = view(redis, "team-a", end, kHalfLifeMs).first;
  redis_lines(redis, {"RPUSH", "q:journal", End{end, (end - t0) * 1000, '1', 2, 1, 0, 0, "team-a", "train", "w1"}.line()});
  EXPECT_EQ(fold(redis, 10), 1);
  const auto after = view(redis, "team-a", end, kHalfLifeMs);
  EXPECT_NEAR(after.first, before, kMicro) << "counted once: in the decayed use now, no longer as running";
  EXPECT_EQ(after.second, 1);
  const long long later = end + 1800000;
  const double want = accrued(2, t0, end, later, kHalfLifeMs) + accrued(1, t0 + 300000, later, later, kHalfLifeMs);
  EXPECT_NEAR(view(redis, "team-a", later, kHalfLifeMs).first, want, kMicro);

  // The last attempt ends: nothing of team-a's runs, nothing is left of its starts.
  redis_lines(redis, {"RPUSH", "q:journal", End{later, (later - t0 - 300000) * 1000, '1', 1, 1, 0, 0, "team-a", "train", "w1"}.line()});
  EXPECT_EQ(fold(redis, 10), 1);
  const auto run = numbers(hash(redis, "q:usage").at("team-a|run"));
  ASSERT_EQ(run.size(), 7u);
  for (int i : {0, 1, 5, 6}) EXPECT_EQ(run[i], 0) << i;
  EXPECT_EQ(view(redis, "team-a", later + 60000, kHalfLifeMs).second, 0);
}

// The running use is kept as of its last write, so an attempt running for thousands
// of half-lives is worth what it can be at most (no epoch to overflow); a changed
// half-life applies from the last write on; a value from before the running use was
// kept counts its attempts from its next write.
TEST(UsageRunning, LongRunsChangedHalfLivesAndOldValues) {
  RedisServer redis;
  constexpr long long kHalfLifeMs = 1000;
  const long long t0 = 1764000000000, late = t0 + 2000 * kHalfLifeMs;
  const double k1 = 1 / std::log(2.0), k4 = 4 / std::log(2.0);  // half-life / ln 2, in seconds
  started(redis, "team-a", 1, t0, kHalfLifeMs);
  EXPECT_NEAR(view(redis, "team-a", late, kHalfLifeMs).first, k1, kMicro);
  started(redis, "team-a", 1, late, kHalfLifeMs);
  const auto [used, held] = view(redis, "team-a", late + kHalfLifeMs, kHalfLifeMs);
  EXPECT_NEAR(used, k1 / 2 + 2 * k1 / 2, kMicro) << "what was used, halved, and both GPUs' half-life's worth";
  EXPECT_EQ(held, 2);

  // The half-life becomes 4 s.
  const double at_2s = k1 * std::pow(2.0, -0.5) + 2 * k4 * (1 - std::pow(2.0, -0.5));
  EXPECT_NEAR(view(redis, "team-a", late + 2000, 4000).first, at_2s, kMicro);
  started(redis, "team-a", 1, late + 2000, 4000);
  EXPECT_NEAR(view(redis, "team-a", late + 6000, 4000).first, at_2s / 2 + 3 * k4 / 2, kMicro);

  // A value written before the running use was kept ('n1 n2 n3 n4'): held, nothing used yet.
  redis_lines(redis, {"HSET", "q:usage", "team-b|run", "2 2 0 0"});
  EXPECT_EQ(view(redis, "team-b", late, kHalfLifeMs), std::make_pair(0.0, 2.0));
  started(redis, "team-b", 1, late, kHalfLifeMs);
  EXPECT_NEAR(view(redis, "team-b", late + kHalfLifeMs, kHalfLifeMs).first, 3 * k1 / 2, kMicro);
}

// An end takes its amounts out of the held use at once, before any fold: the next
// claim's order sees them gone. Its use stays counted, decaying, in the held value
// until the maintenance pass folds it, then in the decayed use: the same before the
// end, after it and after the fold. (The journal's duration is in microseconds of
// Redis's clock, the held value's clock in milliseconds: they differ by under a
// millisecond of the job's GPUs.)
TEST(UsageRunning, AnEndFreesItsHoldingAtOnceAndItsUseIsNeverMissing) {
  RedisServer redis;
  constexpr long long kHalfLifeMs = 600000;
  constexpr double kMs = 2e-3 + kMicro;  // 2 GPUs x one millisecond
  redis_lines(redis, {"HSET", "q:config", "usage_half_life_ms", std::to_string(kHalfLifeMs)});
  const long long t0 = redis_now_ms(redis) - 1200000;  // started 20 minutes ago
  started(redis, "team-a", 2, t0, kHalfLifeMs);
  started(redis, "team-a", 1, t0 + 300000, kHalfLifeMs);

  const long long end = ended(redis, "team-a", 2, t0, kHalfLifeMs);
  const double want = accrued(2, t0, end, end, kHalfLifeMs) + accrued(1, t0 + 300000, end, end, kHalfLifeMs);
  const auto at_end = view(redis, "team-a", end, kHalfLifeMs);
  EXPECT_EQ(at_end.second, 1) << "the ended attempt's 2 GPUs are no longer held, with no fold";
  EXPECT_NEAR(at_end.first, want, kMs) << "its use is still counted";
  EXPECT_EQ(view(redis, "*", end, kHalfLifeMs).second, 1);
  const auto line = redis_lines(redis, {"LINDEX", "q:journal", "0"});
  ASSERT_EQ(line.size(), 1u);
  EXPECT_NE(line[0].find("\t2\t2\t1\t0\t0\tteam-a\t"), std::string::npos) << line[0] << ": journaled as freed ('2')";

  EXPECT_EQ(fold(redis, 10), 1);
  const auto folded = view(redis, "team-a", end, kHalfLifeMs);
  EXPECT_NEAR(folded.first, at_end.first, kMs) << "counted once: moved to the decayed use";
  EXPECT_EQ(folded.second, 1) << "the fold does not free it again";
  const long long later = end + 1800000;
  EXPECT_NEAR(view(redis, "team-a", later, kHalfLifeMs).first,
              accrued(2, t0, end, later, kHalfLifeMs) + accrued(1, t0 + 300000, later, later, kHalfLifeMs), kMs);
  const auto run = numbers(hash(redis, "q:usage").at("team-a|run"));
  ASSERT_EQ(run.size(), 7u);
  EXPECT_EQ(run[0], 1);
  EXPECT_LE(run[5], 1 * 1e6 * kHalfLifeMs / 1000 / std::log(2.0)) << "what is left is the running attempt's";
}

// A fold that takes a full batch leaves the rest of the journal for the next call:
// the held value keeps the use of the ended attempts still in the journal (nothing
// is cut to what the running jobs can have used before they are folded).
TEST(UsageRunning, AFullBatchKeepsTheUseOfLinesNotYetFolded) {
  RedisServer redis;
  constexpr long long kHalfLifeMs = 600000;
  constexpr double kMs = 2 * (2e-3 + kMicro);
  redis_lines(redis, {"HSET", "q:config", "usage_half_life_ms", std::to_string(kHalfLifeMs)});
  const long long t0 = redis_now_ms(redis) - 600000;
  started(redis, "team-a", 2, t0, kHalfLifeMs);
  started(redis, "team-a", 2, t0 + 60000, kHalfLifeMs);
  ended(redis, "team-a", 2, t0, kHalfLifeMs);
  const long long end = ended(redis, "team-a", 2, t0 + 60000, kHalfLifeMs);
  const auto before = view(redis, "team-a", end, kHalfLifeMs);
  EXPECT_EQ(before.second, 0);
  EXPECT_EQ(fold(redis, 1), 1) << "a full batch: one line of two";
  EXPECT_NEAR(view(redis, "team-a", end, kHalfLifeMs).first, before.first, kMs) << "the second end's use is still there";
  EXPECT_EQ(fold(redis, 1), 1);
  EXPECT_EQ(fold(redis, 1), 0);
  EXPECT_NEAR(view(redis, "team-a", end, kHalfLifeMs).first, before.first, kMs);
  const auto run = numbers(hash(redis, "q:usage").at("team-a|run"));
  ASSERT_EQ(run.size(), 7u);
  EXPECT_EQ(run[5], 0) << "drained, with nothing held: nothing left running";
}
