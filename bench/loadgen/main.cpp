// HTTP load generator for a running broker (loopback only): producer threads PUSH,
// worker threads FETCH+ACK (with and without capabilities), each thread over its
// own keep-alive connection, spoken with Boost.Beast (loadgen/beast_client.hpp: a
// lean client leaves the cores to the broker it measures). Every phase is bounded
// in count and in time. The same run measures the Redis ceiling (a minimal claim
// script over hiredis) and prints the broker's FETCH+ACK rate as a fraction of it,
// and (with --redis) the Redis work per job: INFO commandstats and INFO cpu deltas
// over PUSH + FETCH + ACK.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <algorithm>
#include <chrono>
#include <deque>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "common/stats.hpp"
#include "loadgen/beast_client.hpp"
#include "loadgen/first_job_id.hpp"
#include "loadgen/redis_ceiling.hpp"
#include "ojs/client/http_client.hpp"

using nlohmann::json;
using ojs::bench::Percentiles;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  std::string url = "http://127.0.0.1:8080";
  std::string redis;
  std::string queue = "bench";
  int queues = 1;  // > 1: jobs spread over <queue>-0 .. <queue>-(N-1) (one Redis Cluster slot each)
  int producers = 4;
  int workers = 4;
  long long jobs = 20000;
  double duration_s = 30;
  long long pending = 0;
  int prefill_connections = 16;
  double prefill_max_s = 300;
  int classes = 1;
  int ceiling_pipeline = 32;
  long long ceiling_ops = 200000;
  bool skip_plain = false;
  bool skip_ack_fetch = false;
  bool json_output = false;
  int broker_pid = 0;  // > 0: also report that process's CPU per job (a broker on this machine)
  int hold = 0;  // FETCH+ACK: jobs each worker keeps running while it fetches the next (it ACKs the oldest)
};

// CPU seconds (user + system) a process has used, from /proc/<pid>/stat; -1 when unreadable.
// Context switches of every thread of a process (voluntary and not), from
// /proc/PID/task/*/status; -1 when unreadable. In a VM a switch is the costly part
// of a request's hand-offs and Redis waits (docs/benchmarks.md).
long long process_switches(int pid) {
  long long total = 0;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream in(task.path() / "status");
    for (std::string line; std::getline(in, line);)
      if (line.rfind("voluntary_ctxt_switches:", 0) == 0 || line.rfind("nonvoluntary_ctxt_switches:", 0) == 0)
        total += std::stoll(line.substr(line.find(':') + 1));
  }
  return ec ? -1 : total;
}

double process_cpu_s(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');  // the name may hold spaces; the fields follow it
  if (close == std::string::npos) return -1;
  std::istringstream rest(text.substr(close + 2));
  std::string field;
  double utime = -1, stime = -1;
  for (int i = 3; i <= 15 && rest >> field; ++i) {  // fields 14 and 15: utime, stime (clock ticks)
    if (i == 14) utime = std::stod(field);
    if (i == 15) stime = std::stod(field);
  }
  if (utime < 0 || stime < 0) return -1;
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// One operation's figures over a phase.
struct OpStats {
  std::string name;
  long long ok = 0;
  long long errors = 0;
  double seconds = 0;
  Percentiles latency_us;
  double per_s() const { return seconds > 0 ? static_cast<double>(ok) / seconds : 0; }
};

json to_json(const OpStats& s) {
  return {{"op", s.name}, {"ok", s.ok}, {"errors", s.errors}, {"seconds", s.seconds}, {"per_s", s.per_s()},
          {"p50_us", s.latency_us.p50}, {"p99_us", s.latency_us.p99}, {"p999_us", s.latency_us.p999},
          {"max_us", s.latency_us.max}};
}

// Per-thread samples, merged at the end of a phase.
struct Recorder {
  std::vector<std::vector<std::int64_t>> samples;
  std::vector<long long> errors;
  explicit Recorder(int threads) : samples(threads), errors(threads, 0) {}
  OpStats finish(std::string name, double seconds) {
    OpStats s;
    s.name = std::move(name);
    std::vector<std::int64_t> all;
    for (auto& v : samples) all.insert(all.end(), v.begin(), v.end());
    for (auto e : errors) s.errors += e;
    s.ok = static_cast<long long>(all.size());
    s.seconds = seconds;
    s.latency_us = ojs::bench::percentiles(all, 1e-3);
    return s;
  }
};

std::int64_t since_ns(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t).count();
}
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
Clock::time_point after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

ojs::HttpClient client(const Options& o) { return ojs::HttpClient(ojs::HttpClientOptions{o.url, {}, 30000, {}, false}); }

bool ok_status(long s) { return s >= 200 && s < 300; }

// Job bodies: class c (of K) asks for one GPU with at least c+1 GB: K distinct
// requirement classes that one worker (memory_gb >= K) satisfies. Plain jobs carry
// no ext_ml_* attribute at all.
std::string job_body(const std::string& queue, long long seq, int classes, bool plain) {
  std::string body = R"({"type":"bench.noop","args":[)" + std::to_string(seq) + R"(],"options":{"queue":")" + queue + "\"}";
  if (!plain) body += R"(,"ext_ml_gpu_count":1,"ext_ml_gpu_memory_gb":)" + std::to_string(1 + seq % classes);
  return body + "}";
}

json worker_capabilities(int classes) {
  return {{"accelerator", "gpu"},
          {"gpu", {{"type", "nvidia-h100"}, {"count", 8}, {"memory_gb", std::max(80, classes)},
                   {"compute_capability", "9.0"}, {"interconnect", "nvlink"}}},
          {"cpu_cores", 112}, {"memory_gb", 2048}, {"labels", {{"region", "us-east-1"}, {"pool", "bench"}}}};
}

// The queue of job `i`: `queue` itself, or with --queues N one of queue-0 .. queue-(N-1).
std::string queue_of(const Options& o, const std::string& queue, long long i) {
  return o.queues == 1 ? queue : queue + "-" + std::to_string(i % o.queues);
}

// Every queue a worker asks for, starting at its own (workers spread over the queues' slots).
json fetch_queues(const Options& o, const std::string& queue, int worker) {
  json out = json::array();
  for (int k = 0; k < o.queues; ++k) out.push_back(queue_of(o, queue, worker + k));
  return out;
}

// PUSH `count` jobs from `threads` connections, stopping at `deadline`.
OpStats push_phase(const Options& o, const std::string& queue, long long count, int threads, double max_s, bool plain,
                   const std::string& name) {
  Recorder rec(threads);
  std::atomic<long long> next{0};
  std::atomic<bool> broken{false};
  const auto start = Clock::now();
  const auto deadline = after(max_s);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      ojs::bench::BeastClient http(o.url);
      rec.samples[t].reserve(static_cast<std::size_t>(count / threads + 1));
      for (long long i; !broken && (i = next.fetch_add(1)) < count && Clock::now() < deadline;) {
        const auto body = job_body(queue_of(o, queue, i), i, o.classes, plain);
        const auto t0 = Clock::now();
        const auto r = http.post("/ojs/v1/jobs", body);
        if (ok_status(r.status)) {
          rec.samples[t].push_back(since_ns(t0));
        } else {
          if (++rec.errors[t] == 1) std::cerr << "loadgen: PUSH " << r.status << " " << r.transport_error << r.body.substr(0, 300) << "\n";
          if (r.status == 0) broken = true;
        }
      }
    });
  }
  for (auto& th : pool) th.join();
  return rec.finish(name, seconds_since(start));
}

// An ACK body, the bytes json{{"fetch", F}, {"job_id", id}, {"worker_id", w}}.dump()
// gives (keys in order), without building the document for each job: `fetch_part` is
// F dumped once, empty for a plain ACK.
std::string ack_body(const std::string& id, const std::string& worker_id, const std::string& fetch_part) {
  std::string body = fetch_part.empty() ? "{" : "{\"fetch\":" + fetch_part + ",";
  return body + "\"job_id\":" + json(id).dump() + ",\"worker_id\":" + json(worker_id).dump() + "}";
}

// One worker thread's FETCH body: its queues (each starting at its own), one job, and
// the capabilities of the `caps` phases.
json worker_fetch_request(const Options& o, const std::string& queue, int t, const json* caps) {
  json request = {{"queues", fetch_queues(o, queue, t)}, {"count", 1}};
  if (caps) request["capabilities"] = *caps;
  return request;
}

struct CycleStats {
  OpStats fetch, ack, cycle;
  long long empty_fetches = 0;
};

// Workers FETCH one job and ACK it until `count` jobs are done, the deadline
// passes, or the queue stays empty for 2 s. With --hold N a worker keeps N jobs
// running while it fetches the next (it ACKs the oldest after each FETCH past N;
// those left are ACKed at the end): a FETCH then finds the worker holding N jobs.
CycleStats fetch_ack_phase(const Options& o, const std::string& queue, long long count, bool with_caps,
                           const std::string& label) {
  const int threads = o.workers;
  Recorder fetch(threads), ack(threads), cycle(threads);
  std::atomic<long long> tickets{0};
  std::atomic<long long> empties{0};
  std::atomic<bool> stop{false};
  const json caps = worker_capabilities(o.classes);
  const auto start = Clock::now();
  const auto deadline = after(o.duration_s);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      ojs::bench::BeastClient http(o.url);
      const std::string worker_id = "loadgen-" + label + "-" + std::to_string(t);
      json fetch_req = worker_fetch_request(o, queue, t, with_caps ? &caps : nullptr);
      fetch_req["worker_id"] = worker_id;
      const std::string fetch_body = fetch_req.dump();
      auto empty_since = Clock::time_point{};
      std::deque<std::string> held;  // --hold: the jobs it runs, oldest first
      const auto ack_job = [&](const std::string& id, Clock::time_point t0) {
        const auto t1 = Clock::now();
        const auto a = http.post("/ojs/v1/workers/ack", ack_body(id, worker_id, {}));
        if (ok_status(a.status)) {
          ack.samples[t].push_back(since_ns(t1));
          cycle.samples[t].push_back(since_ns(t0));
        } else if (++ack.errors[t] == 1) {
          std::cerr << "loadgen: ACK " << a.status << " " << a.body.substr(0, 300) << "\n";
        }
      };
      while (!stop && Clock::now() < deadline && tickets.fetch_add(1) < count) {
        const auto t0 = Clock::now();
        const auto r = http.post("/ojs/v1/workers/fetch", fetch_body);
        const auto fetch_ns = since_ns(t0);
        std::string id;
        if (r.status == 200) {
          id = ojs::bench::first_job_id(r.body, ojs::bench::JobsAt::top);
        } else if (r.status != 204) {
          if (++fetch.errors[t] == 1) std::cerr << "loadgen: FETCH " << r.status << " " << r.transport_error << r.body.substr(0, 300) << "\n";
          if (r.status == 0) stop = true;
        }
        if (id.empty()) {  // nothing to do: give the ticket back, give up after 2 s of empty queue
          --tickets;
          ++empties;
          if (empty_since == Clock::time_point{}) empty_since = Clock::now();
          if (Clock::now() - empty_since > std::chrono::seconds(2)) stop = true;
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
          continue;
        }
        empty_since = {};
        fetch.samples[t].push_back(fetch_ns);
        held.push_back(std::move(id));
        if (static_cast<int>(held.size()) <= o.hold) continue;
        ack_job(held.front(), t0);
        held.pop_front();
      }
      for (const auto& id : held) ack_job(id, Clock::now());
    });
  }
  for (auto& th : pool) th.join();
  const double secs = seconds_since(start);
  const std::string suffix = with_caps ? " (caps)" : " (plain)";
  CycleStats s{fetch.finish("FETCH" + suffix, secs), ack.finish("ACK" + suffix, secs), cycle.finish("FETCH+ACK" + suffix, secs),
               empties.load()};
  return s;
}

// Workers take jobs with ACK-with-fetch (docs/http-api.md): one FETCH to start, then
// each ACK asks for the next job in the same request, until `count` jobs are done,
// the deadline passes, or the queue stays empty for 2 s.
OpStats ack_fetch_phase(const Options& o, const std::string& queue, long long count, bool with_caps, const std::string& label) {
  const int threads = o.workers;
  Recorder cycle(threads);
  std::atomic<long long> tickets{0};
  std::atomic<bool> stop{false};
  const json caps = worker_capabilities(o.classes);
  const auto start = Clock::now();
  const auto deadline = after(o.duration_s);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      ojs::bench::BeastClient http(o.url);
      const std::string worker_id = "loadgen-" + label + "-" + std::to_string(t);
      const json fetch_req = worker_fetch_request(o, queue, t, with_caps ? &caps : nullptr);
      json first = fetch_req;
      first["worker_id"] = worker_id;
      const std::string fetch_body = first.dump();
      const std::string ack_fetch_part = fetch_req.dump();
      std::string id;
      auto empty_since = Clock::time_point{};
      while (!stop && Clock::now() < deadline) {
        if (id.empty()) {  // nothing in hand: a plain FETCH, as a worker starts
          const auto r = http.post("/ojs/v1/workers/fetch", fetch_body);
          if (r.status == 200) {
            id = ojs::bench::first_job_id(r.body, ojs::bench::JobsAt::top);
          } else if (r.status != 204) {  // 204: nothing to run now, as fetch_ack_phase counts it
            if (++cycle.errors[t] == 1) std::cerr << "loadgen: FETCH " << r.status << " " << r.transport_error << r.body.substr(0, 300) << "\n";
            if (r.status == 0) stop = true;
          }
          if (id.empty()) {
            if (empty_since == Clock::time_point{}) empty_since = Clock::now();
            if (Clock::now() - empty_since > std::chrono::seconds(2)) stop = true;
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
            continue;
          }
          empty_since = {};
        }
        const bool more = tickets.fetch_add(1) + 1 < count;  // the last ticket's ACK asks for nothing
        const auto t0 = Clock::now();
        const auto a = http.post("/ojs/v1/workers/ack", ack_body(id, worker_id, more ? ack_fetch_part : std::string()));
        id.clear();
        if (ok_status(a.status)) {
          cycle.samples[t].push_back(since_ns(t0));
          if (more) id = ojs::bench::first_job_id(a.body, ojs::bench::JobsAt::fetch);
        } else if (++cycle.errors[t] == 1) {
          std::cerr << "loadgen: ACK " << a.status << " " << a.body.substr(0, 300) << "\n";
        }
        if (!more) stop = true;
      }
    });
  }
  for (auto& th : pool) th.join();
  return cycle.finish(std::string("ACK-with-fetch") + (with_caps ? " (caps)" : " (plain)"), seconds_since(start));
}

long long available(const Options& o, const std::string& queue) {
  auto http = client(o);
  long long total = 0;
  for (int k = 0; k < o.queues; ++k) {
    const auto r = http.get("/ojs/v1/queues/" + queue_of(o, queue, k) + "/stats");
    if (r.status == 404) continue;  // a queue exists once a job was pushed to it
    const auto body = json::parse(r.body, nullptr, false);
    if (!body.is_object() || !body.contains("stats")) return -1;
    total += body["stats"].value("available", -1LL);
  }
  return total;
}

// Redis work per job completed between two snapshots. `command_us` sums the usec of
// every commandstats entry: commands run inside a script are counted both in their
// own entry and in the FCALL (or EVALSHA) that ran them (Redis 7 does so), so it is an upper
// bound, taken the same way before and after a change. `cpu_us` is the CPU time of
// Redis's command thread (including socket I/O): what the one core actually spent.
json redis_per_job(const ojs::bench::RedisUsage& before, const ojs::bench::RedisUsage& after, long long jobs,
                   const std::string& phase) {
  json out = {{"phase", phase}, {"jobs", jobs}};
  if (!before.error.empty() || !after.error.empty()) {
    out["error"] = before.error.empty() ? after.error : before.error;
    return out;
  }
  const double n = jobs > 0 ? static_cast<double>(jobs) : 1.0;
  long long usec = 0, calls = 0, script_usec = 0, script_calls = 0;
  json per_command = json::object();
  for (const auto& [name, a] : after.commands) {
    const auto it = before.commands.find(name);
    const long long du = a.usec - (it == before.commands.end() ? 0 : it->second.usec);
    const long long dc = a.calls - (it == before.commands.end() ? 0 : it->second.calls);
    if (dc <= 0 || name.rfind("config", 0) == 0 || name == "info") continue;  // our own probes
    usec += du;
    calls += dc;
    if (name == "fcall" || name == "fcall_ro" || name == "evalsha" || name == "eval") {  // the broker's scripts, either form
      script_usec += du;
      script_calls += dc;
    }
    per_command[name] = {{"calls_per_job", dc / n}, {"us_per_job", du / n}};
  }
  out["command_us_per_job"] = usec / n;
  out["script_us_per_job"] = script_usec / n;
  out["scripts_per_job"] = script_calls / n;
  out["calls_per_job"] = calls / n;
  out["cpu_us_per_job"] = (after.cpu_main_s - before.cpu_main_s) * 1e6 / n;
  // Read events Redis processed: a request or a pipeline of them is one (when it
  // arrives in one piece), so this counts round trips, the broker's background
  // passes and this tool's own probes included.
  out["reads_per_job"] = (after.reads - before.reads) / n;
  out["commands"] = per_command;
  return out;
}

void print_redis_per_job(const json& r) {
  if (r.contains("error")) {
    std::printf("Redis work (%s): %s\n", r["phase"].get<std::string>().c_str(), r["error"].get<std::string>().c_str());
    return;
  }
  std::printf("Redis work per job, %s (%lld jobs): commandstats %.1f us (scripts %.1f us in %.2f FCALL/EVALSHA), "
              "%.1f calls, %.1f round trips (read events); Redis main-thread CPU %.1f us\n",
              r["phase"].get<std::string>().c_str(), r["jobs"].get<long long>(), r["command_us_per_job"].get<double>(),
              r["script_us_per_job"].get<double>(), r["scripts_per_job"].get<double>(), r["calls_per_job"].get<double>(),
              r["reads_per_job"].get<double>(), r["cpu_us_per_job"].get<double>());
  std::vector<std::pair<double, std::string>> top;
  for (auto it = r["commands"].begin(); it != r["commands"].end(); ++it)
    top.emplace_back(it.value()["us_per_job"].get<double>(), it.key());
  std::sort(top.rbegin(), top.rend());
  std::printf("  ");
  for (std::size_t i = 0; i < top.size() && i < 10; ++i)
    std::printf("%s %.2fx %.1fus  ", top[i].second.c_str(), r["commands"][top[i].second]["calls_per_job"].get<double>(), top[i].first);
  std::printf("\n");
}

void print_table(const std::vector<OpStats>& ops) {
  std::printf("%-22s %9s %7s %8s %10s %10s %10s %10s\n", "operation", "ok", "errors", "secs", "per_s", "p50_us", "p99_us", "p999_us");
  for (const auto& s : ops)
    std::printf("%-22s %9lld %7lld %8.2f %10.0f %10.0f %10.0f %10.0f\n", s.name.c_str(), s.ok, s.errors, s.seconds, s.per_s(),
                s.latency_us.p50, s.latency_us.p99, s.latency_us.p999);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"OJS broker load generator: PUSH and FETCH+ACK throughput and latency, and the Redis claim ceiling.\n"
               "PUSH, FETCH, ACK and ACK-with-fetch go over one kept-alive HTTP/1.1 connection per thread spoken with\n"
               "Boost.Beast's synchronous API, not the product's libcurl client: on a machine shared with the broker and\n"
               "its Redis, what loadgen spends per job is taken from what it measures (docs/benchmarks.md)."};
  app.add_option("--url", o.url, "broker base URL (loopback)");
  app.add_option("--redis", o.redis, "the broker's Redis (unix socket path, unix:///path or redis://host:port/db); empty: skip the ceiling");
  app.add_option("--queue", o.queue, "queue name (the plain-worker phase uses <queue>-plain)");
  app.add_option("--queues", o.queues, "spread the jobs over N queues <queue>-0..N-1; workers FETCH from all, each starting at its own")
      ->check(CLI::Range(1, 1000));
  app.add_option("--producers", o.producers, "producer threads (one connection each)")->check(CLI::Range(1, 256));
  app.add_option("--workers", o.workers, "worker threads (one connection each); also the ceiling's connections")->check(CLI::Range(1, 256));
  app.add_option("--jobs", o.jobs, "jobs pushed, then fetched and acked, per phase")->check(CLI::Range(1LL, 10000000LL));
  app.add_option("--duration-s", o.duration_s, "time limit of each measured phase")->check(CLI::Range(0.1, 3600.0));
  app.add_option("--pending", o.pending, "top the queue up to N available jobs (via PUSH) before measuring")->check(CLI::Range(0LL, 10000000LL));
  app.add_option("--prefill-connections", o.prefill_connections, "connections used to pre-fill")->check(CLI::Range(1, 256));
  app.add_option("--prefill-max-s", o.prefill_max_s, "time limit of the pre-fill")->check(CLI::Range(1.0, 3600.0));
  app.add_option("--classes", o.classes, "distinct requirement classes the jobs spread over")->check(CLI::Range(1, 640));
  app.add_option("--ceiling-pipeline", o.ceiling_pipeline, "claim scripts in flight per ceiling connection (1 = none)")->check(CLI::Range(1, 1024));
  app.add_option("--ceiling-ops", o.ceiling_ops, "claims seeded for the ceiling measurement")->check(CLI::Range(1000LL, 10000000LL));
  app.add_flag("--skip-plain", o.skip_plain, "skip the PUSH/FETCH+ACK phase of workers without capabilities");
  app.add_flag("--skip-ack-fetch", o.skip_ack_fetch, "skip the PUSH/ACK-with-fetch phase (workers with capabilities)");
  app.add_option("--broker-pid", o.broker_pid, "the broker's process id (same machine): report its CPU per job beside Redis's and this tool's")
      ->check(CLI::Range(1, 1 << 30));
  app.add_option("--hold", o.hold, "FETCH+ACK: jobs each worker keeps running while it fetches the next (ACKs the oldest)")
      ->check(CLI::Range(0, 7));
  app.add_flag("--json", o.json_output, "print one JSON object instead of tables");
  CLI11_PARSE(app, argc, argv);

  json report = {{"config", {{"url", o.url}, {"queue", o.queue}, {"queues", o.queues}, {"producers", o.producers}, {"workers", o.workers},
                             {"jobs", o.jobs}, {"duration_s", o.duration_s}, {"pending", o.pending}, {"classes", o.classes}, {"hold", o.hold}}}};
  std::vector<OpStats> ops;
  auto log = [&](const std::string& line) {
    if (!o.json_output) std::cout << line << std::endl;
  };

  const long long before = available(o, o.queue);
  if (before < 0) {
    std::cerr << "loadgen: cannot read /ojs/v1/queues/" << o.queue << "/stats at " << o.url << "\n";
    return 2;
  }
  // Pre-fill through PUSH (the honest path), many connections, bounded in time.
  if (o.pending > before) {
    log("pre-filling " + std::to_string(o.pending - before) + " jobs over " + std::to_string(o.prefill_connections) + " connections...");
    auto fill = push_phase(o, o.queue, o.pending - before, o.prefill_connections, o.prefill_max_s, false, "PUSH (pre-fill)");
    report["prefill"] = to_json(fill);
    ops.push_back(fill);
  }
  const long long depth = available(o, o.queue);
  report["pending_before_measure"] = depth;
  log("queue " + o.queue + ": " + std::to_string(depth) + " available before measuring, " + std::to_string(o.classes) + " classes");

  std::optional<ojs::bench::RedisTarget> redis;
  if (!o.redis.empty()) redis = ojs::bench::parse_redis_target(o.redis);
  auto usage = [&] { return redis ? ojs::bench::read_redis_usage(*redis) : ojs::bench::RedisUsage{}; };
  report["redis_per_job"] = json::array();

  auto usage_before = usage();
  const double broker_cpu_before = o.broker_pid ? process_cpu_s(o.broker_pid) : -1, own_cpu_before = process_cpu_s(getpid());
  const long long broker_switches_before = o.broker_pid ? process_switches(o.broker_pid) : -1;
  const auto push = push_phase(o, o.queue, o.jobs, o.producers, o.duration_s, false, "PUSH (ml)");
  ops.push_back(push);
  // PUSH alone (the first half of the jobs' work): loadgen's and the broker's CPU per
  // pushed job here, Redis's in its own redis_per_job entry.
  json push_cpu = json::object();
  if (push.ok > 0) {
    push_cpu["loadgen_us_per_job"] = (process_cpu_s(getpid()) - own_cpu_before) * 1e6 / push.ok;
    const double broker_after_push = o.broker_pid ? process_cpu_s(o.broker_pid) : -1;
    if (broker_after_push >= 0 && broker_cpu_before >= 0) push_cpu["broker_us_per_job"] = (broker_after_push - broker_cpu_before) * 1e6 / push.ok;
    if (redis) report["redis_per_job"].push_back(redis_per_job(usage_before, usage(), push.ok, "PUSH (ml)"));
  }
  auto caps = fetch_ack_phase(o, o.queue, push.ok, true, "caps");
  ops.insert(ops.end(), {caps.fetch, caps.ack, caps.cycle});
  if (redis) report["redis_per_job"].push_back(redis_per_job(usage_before, usage(), caps.cycle.ok, "PUSH+FETCH+ACK (caps)"));
  // The other processes' share of the same jobs: on a small machine they compete with Redis for the cores.
  if (caps.cycle.ok > 0) {
    json cpu = {{"phase", "PUSH+FETCH+ACK (caps)"}, {"loadgen_us_per_job", (process_cpu_s(getpid()) - own_cpu_before) * 1e6 / caps.cycle.ok}};
    if (o.broker_pid) {
      const double after = process_cpu_s(o.broker_pid);
      if (after >= 0 && broker_cpu_before >= 0) cpu["broker_us_per_job"] = (after - broker_cpu_before) * 1e6 / caps.cycle.ok;
      const long long switches = process_switches(o.broker_pid);
      if (switches >= 0 && broker_switches_before >= 0)
        cpu["broker_switches_per_job"] = static_cast<double>(switches - broker_switches_before) / caps.cycle.ok;
      else cpu["error"] = "cannot read /proc/" + std::to_string(o.broker_pid) + "/stat";
    }
    cpu["push"] = push_cpu;
    report["process_cpu_per_job"] = cpu;
  }
  report["pending_after_measure"] = available(o, o.queue);
  if (!o.skip_ack_fetch) {  // the same jobs again, taken with ACK-with-fetch
    usage_before = usage();
    const double broker_before = o.broker_pid ? process_cpu_s(o.broker_pid) : -1, own_before = process_cpu_s(getpid());
    const long long switches_before = o.broker_pid ? process_switches(o.broker_pid) : -1;
    ops.push_back(push_phase(o, o.queue, o.jobs, o.producers, o.duration_s, false, "PUSH (ml)"));
    const auto chained = ack_fetch_phase(o, o.queue, ops.back().ok, true, "chain");
    ops.push_back(chained);
    if (redis) report["redis_per_job"].push_back(redis_per_job(usage_before, usage(), chained.ok, "PUSH+ACK-with-fetch (caps)"));
    if (chained.ok > 0 && report.contains("process_cpu_per_job"))
      report["process_cpu_per_job"]["loadgen_us_per_job_ack_with_fetch"] = (process_cpu_s(getpid()) - own_before) * 1e6 / chained.ok;
    if (o.broker_pid && chained.ok > 0 && broker_before >= 0)
    {
      report["process_cpu_per_job"]["broker_us_per_job_ack_with_fetch"] = (process_cpu_s(o.broker_pid) - broker_before) * 1e6 / chained.ok;
      if (switches_before >= 0)
        report["process_cpu_per_job"]["broker_switches_per_job_ack_with_fetch"] =
            static_cast<double>(process_switches(o.broker_pid) - switches_before) / chained.ok;
    }
  }
  std::optional<CycleStats> plain;
  if (!o.skip_plain) {
    const std::string plain_queue = o.queue + "-plain";
    usage_before = usage();
    ops.push_back(push_phase(o, plain_queue, o.jobs, o.producers, o.duration_s, true, "PUSH (plain)"));
    plain = fetch_ack_phase(o, plain_queue, ops.back().ok, false, "plain");
    ops.insert(ops.end(), {plain->fetch, plain->ack, plain->cycle});
    if (redis) report["redis_per_job"].push_back(redis_per_job(usage_before, usage(), plain->cycle.ok, "PUSH+FETCH+ACK (plain)"));
  }
  report["ops"] = json::array();
  for (const auto& s : ops) report["ops"].push_back(to_json(s));

  if (redis) {
    const auto& target = *redis;
    json ceilings = json::array();
    for (int pipeline : {1, o.ceiling_pipeline}) {
      ojs::bench::CeilingOptions co;
      co.connections = o.workers;
      co.pipeline = pipeline;
      co.ops = o.ceiling_ops;
      co.max_seconds = o.duration_s;
      const auto usage_ceiling = usage();
      const auto c = ojs::bench::measure_claim_ceiling(target, co);
      // The minimal claim's own Redis cost in this run: the unit the per-job figures
      // are divided by, which cancels most of a shared machine's noise.
      const json minimal = redis_per_job(usage_ceiling, usage(), c.claims, "minimal claim");
      if (!c.error.empty()) std::cerr << "loadgen: ceiling: " << c.error << "\n";
      json cj = {{"connections", co.connections}, {"pipeline", pipeline}, {"claims", c.claims}, {"seconds", c.seconds},
                 {"per_s", c.per_s}, {"rtt_p50_us", c.rtt_us.p50}, {"rtt_p99_us", c.rtt_us.p99},
                 {"fetch_ack_caps_ratio", c.per_s > 0 ? caps.cycle.per_s() / c.per_s : 0.0}};
      if (plain) cj["fetch_ack_plain_ratio"] = c.per_s > 0 ? plain->cycle.per_s() / c.per_s : 0.0;
      if (!c.error.empty()) cj["error"] = c.error;
      if (!minimal.contains("error")) {
        cj["minimal_claim_command_us"] = minimal["command_us_per_job"];
        cj["minimal_claim_cpu_us"] = minimal["cpu_us_per_job"];
        for (auto& r : report["redis_per_job"]) {
          const double cmd = minimal["command_us_per_job"].get<double>(), cpu = minimal["cpu_us_per_job"].get<double>();
          if (pipeline == 1 && !r.contains("error") && cmd > 0 && cpu > 0) {
            r["command_in_minimal_claims"] = r["command_us_per_job"].get<double>() / cmd;
            r["cpu_in_minimal_claims"] = r["cpu_us_per_job"].get<double>() / cpu;
          }
        }
      }
      ceilings.push_back(cj);
      if (pipeline == 1 && o.ceiling_pipeline == 1) break;
    }
    report["redis_ceiling"] = ceilings;
  }

  if (o.json_output) {
    std::cout << report.dump(2) << std::endl;
  } else {
    print_table(ops);
    if (redis) {
      std::printf("\n");
      for (const auto& r : report["redis_per_job"]) print_redis_per_job(r);
    }
    if (report.contains("process_cpu_per_job")) {
      const auto& c = report["process_cpu_per_job"];
      std::printf("CPU per job, %s: loadgen %.1f us", c["phase"].get<std::string>().c_str(), c["loadgen_us_per_job"].get<double>());
      if (c.contains("broker_us_per_job")) std::printf(", broker %.1f us", c["broker_us_per_job"].get<double>());
      if (c.contains("broker_switches_per_job")) std::printf(", broker context switches %.1f", c["broker_switches_per_job"].get<double>());
      if (c.contains("broker_us_per_job_ack_with_fetch"))
        std::printf("; PUSH+ACK-with-fetch: broker %.1f us, %.1f switches", c["broker_us_per_job_ack_with_fetch"].get<double>(),
                    c.value("broker_switches_per_job_ack_with_fetch", -1.0));
      if (c.contains("loadgen_us_per_job_ack_with_fetch"))
        std::printf("%s loadgen %.1f us", c.contains("broker_us_per_job_ack_with_fetch") ? "," : "; PUSH+ACK-with-fetch:",
                    c["loadgen_us_per_job_ack_with_fetch"].get<double>());
      if (c.contains("error")) std::printf(" (broker: %s)", c["error"].get<std::string>().c_str());
      std::printf("\n");
      if (c.contains("push") && c["push"].contains("loadgen_us_per_job")) {
        std::printf("CPU per job, PUSH (ml) alone: loadgen %.1f us", c["push"]["loadgen_us_per_job"].get<double>());
        if (c["push"].contains("broker_us_per_job")) std::printf(", broker %.1f us", c["push"]["broker_us_per_job"].get<double>());
        std::printf("\n");
      }
    }
    if (report.contains("redis_ceiling")) {
      std::printf("\nRedis ceiling: minimal claim script (ZPOPMIN + HSET) over %d hiredis connections\n", o.workers);
      for (const auto& c : report["redis_ceiling"]) {
        std::printf("  pipeline %3d: %10.0f claims/s (rtt p50 %.0f us, p99 %.0f us); FETCH+ACK (caps) = %.3f of it",
                    c["pipeline"].get<int>(), c["per_s"].get<double>(), c["rtt_p50_us"].get<double>(),
                    c["rtt_p99_us"].get<double>(), c["fetch_ack_caps_ratio"].get<double>());
        if (c.contains("fetch_ack_plain_ratio")) std::printf(", (plain) = %.3f", c["fetch_ack_plain_ratio"].get<double>());
        std::printf("\n");
        if (c.contains("minimal_claim_command_us"))
          std::printf("    the minimal claim itself: commandstats %.1f us, Redis CPU %.1f us per claim\n",
                      c["minimal_claim_command_us"].get<double>(), c["minimal_claim_cpu_us"].get<double>());
      }
      for (const auto& r : report["redis_per_job"])
        if (r.contains("command_in_minimal_claims"))
          std::printf("Redis work per job, %s, in minimal claims (pipeline 1): commandstats %.1f, CPU %.1f\n",
                      r["phase"].get<std::string>().c_str(), r["command_in_minimal_claims"].get<double>(),
                      r["cpu_in_minimal_claims"].get<double>());
    }
  }
  long long errors = 0;
  for (const auto& s : ops) errors += s.errors;
  return errors > 0 ? 1 : 0;
}
