// The store's guarantees seen from outside: a broker killed in the middle of a
// PUSH load leaves no job half-pushed (every job in Redis is complete and in
// its indexes), and one huge request does not hold up /health.
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;
using Clock = std::chrono::steady_clock;

namespace {

// A direct Redis connection: the test inspects the keys the broker wrote.
class RedisProbe {
 public:
  explicit RedisProbe(std::uint16_t port) : ctx_(redisConnect("127.0.0.1", port)) {
    if (!ctx_ || ctx_->err) throw std::runtime_error("cannot connect to test Redis");
  }
  ~RedisProbe() { redisFree(ctx_); }
  // Runs one command; the reply as a string (nil -> "<nil>"), or its elements.
  std::vector<std::string> run(const std::vector<std::string>& argv) {
    std::vector<const char*> ptrs;
    std::vector<size_t> lens;
    for (const auto& a : argv) {
      ptrs.push_back(a.data());
      lens.push_back(a.size());
    }
    auto* r = static_cast<redisReply*>(redisCommandArgv(ctx_, static_cast<int>(argv.size()), ptrs.data(), lens.data()));
    if (!r) throw std::runtime_error("Redis connection lost");
    std::vector<std::string> out;
    auto text = [](const redisReply* e) -> std::string {
      if (e->type == REDIS_REPLY_NIL) return "<nil>";
      if (e->type == REDIS_REPLY_INTEGER) return std::to_string(e->integer);
      return std::string(e->str, e->len);
    };
    if (r->type == REDIS_REPLY_ARRAY)
      for (size_t i = 0; i < r->elements; ++i) out.push_back(text(r->element[i]));
    else
      out.push_back(text(r));
    freeReplyObject(r);
    return out;
  }
  void pipeline(const std::vector<std::vector<std::string>>& commands) {
    for (const auto& argv : commands) {
      std::vector<const char*> ptrs;
      std::vector<size_t> lens;
      for (const auto& a : argv) {
        ptrs.push_back(a.data());
        lens.push_back(a.size());
      }
      redisAppendCommandArgv(ctx_, static_cast<int>(argv.size()), ptrs.data(), lens.data());
    }
    for (std::size_t i = 0; i < commands.size(); ++i) {
      void* reply = nullptr;
      if (redisGetReply(ctx_, &reply) != REDIS_OK) throw std::runtime_error("Redis connection lost");
      freeReplyObject(reply);
    }
  }

 private:
  redisContext* ctx_;
};

// Calls of one command since the last CONFIG RESETSTAT (INFO commandstats).
long long command_calls(RedisProbe& probe, const std::string& command) {
  const auto info = probe.run({"INFO", "commandstats"})[0];
  const auto at = info.find("cmdstat_" + command + ":calls=");
  if (at == std::string::npos) return 0;
  return std::stoll(info.substr(at + command.size() + 15));
}

json escalating_job(int i) {
  return {{"type", "crash.push"},
          {"args", {i}},
          {"options", {{"queue", "crash"}}},
          {"ext_ml_gpu_count", 1},
          {"ext_ml_gpu_memory_gb", 1 + i % 3},
          {"ext_ml_priority_class", "spot"},
          {"ext_ml_priority_escalation", true},
          {"ext_ml_escalation_after_s", 3600}};
}

}  // namespace

// PUSH is one script: the job hash, its ready index and its escalation index are
// written together. Kill the broker while producers push, then look at Redis:
// every accepted job, and every job hash there at all, is complete and indexed.
TEST(Store, BrokerKilledMidPushLeavesNoHalfPushedJob) {
  RedisServer redis;
  auto broker = std::make_unique<BrokerProcess>(redis.url());
  std::mutex mutex;
  std::set<std::string> accepted;
  std::atomic<bool> stop{false};
  std::atomic<int> next{0};
  std::vector<std::thread> producers;
  for (int t = 0; t < 6; ++t) {
    producers.emplace_back([&] {
      ojs::HttpClient http(ojs::HttpClientOptions{broker->url(), {}, 10000, {}, false});
      while (!stop) {
        const auto r = http.post("/ojs/v1/jobs", escalating_job(next++).dump());
        if (r.status == 201) {
          std::lock_guard lock(mutex);
          accepted.insert(json::parse(r.body)["job"]["id"].get<std::string>());
        } else if (r.status == 0) {
          return;  // the broker is gone
        }
      }
    });
  }
  for (auto until = Clock::now() + std::chrono::seconds(120); Clock::now() < until;) {
    {
      std::lock_guard lock(mutex);
      if (accepted.size() >= 400) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  broker->kill9();  // mid-load: several PUSHes are in flight
  stop = true;
  for (auto& p : producers) p.join();
  ASSERT_GE(accepted.size(), 400u) << "the producers could not push before the deadline";

  RedisProbe probe(redis.port());
  std::set<std::string> stored;  // every job hash of the queue, accepted or not
  // KEYS is fine on a private test Redis: the whole key space at once.
  for (const auto& key : probe.run({"KEYS", "ojs:{crash}:job:*"})) stored.insert(key.substr(std::string("ojs:{crash}:job:").size()));
  for (const auto& id : accepted) EXPECT_TRUE(stored.count(id)) << "accepted job " << id << " is not in Redis";
  for (const auto& id : stored) {
    const auto key = "ojs:{crash}:job:" + id;
    const auto f = probe.run({"HMGET", key, "state", "class", "doc", "queue", "rank_base"});
    ASSERT_EQ(f.size(), 5u);
    EXPECT_EQ(f[0], "available") << id;
    for (std::size_t i = 1; i < f.size(); ++i) EXPECT_NE(f[i], "<nil>") << id << " lacks a field";
    EXPECT_NE(probe.run({"ZSCORE", "ojs:{crash}:ready:" + f[1], id})[0], "<nil>") << id << " is not in its ready set";
    EXPECT_NE(probe.run({"ZSCORE", "ojs:{crash}:escalations", id})[0], "<nil>") << id << " is not in the escalation index";
  }

  // A new broker on the same Redis serves every accepted job.
  BrokerProcess again{redis.url()};
  Api api{again.url()};
  for (const auto& id : accepted) {
    const auto r = api.get("/ojs/v1/jobs/" + id);
    ASSERT_EQ(r.status, 200) << id;
    EXPECT_EQ(r.body["job"]["state"], "available") << id;
  }
}

// A heartbeat listing 100k job ids that the worker holds (written straight into
// Redis: 100k active job hashes and their directory entries) runs while /health
// is polled. Every id is extended, and /health answers promptly throughout: the
// heartbeat's Redis work is cut into slices (one script over all 100k ids would
// hold Redis's one thread for about a second) and requests run on a handler
// pool apart from the HTTP I/O threads.
TEST(Store, HealthStaysPromptDuringAHundredThousandIdHeartbeat) {
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--max-body-bytes", "16777216", "--max-heartbeat-jobs", "100000"}};
  Api api{broker.url()};
  const auto held = api.push({{"type", "t"}, {"args", json::array()}, {"options", {{"queue", "beat"}}}});
  ASSERT_EQ(api.fetch({"beat"}, "w1").size(), 1u);

  constexpr int kIds = 100000;
  std::vector<std::string> ids;
  ids.reserve(kIds);
  for (int i = 0; i < kIds - 1; ++i) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "0190a000-0000-7000-8000-%012d", i);
    ids.emplace_back(buf);
  }
  ids.push_back(held);
  {
    RedisProbe probe(redis.port());
    std::vector<std::vector<std::string>> cmds;
    for (std::size_t i = 0; i + 1 < ids.size(); i += 1000) {
      std::vector<std::string> hset{"HSET", "ojs:{_global}:job-queue"};
      for (std::size_t j = i; j < std::min(ids.size() - 1, i + 1000); ++j) {
        hset.push_back(ids[j]);
        hset.push_back("beat");
      }
      cmds.push_back(std::move(hset));
    }
    for (std::size_t i = 0; i + 1 < ids.size(); ++i) {
      cmds.push_back({"HSET", "ojs:{beat}:job:" + ids[i], "id", ids[i], "queue", "beat", "state", "active", "worker_id", "w1"});
      if (cmds.size() >= 2000) {
        probe.pipeline(cmds);
        cmds.clear();
      }
    }
    probe.pipeline(cmds);
  }

  // The same probe before the heartbeat: what /health costs on this machine now.
  Api health{broker.url()};
  auto probe_health = [&health] {
    const auto t0 = Clock::now();
    const auto r = health.get("/ojs/v1/health");
    EXPECT_EQ(r.status, 200);
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  };
  std::vector<double> baseline;
  for (int i = 0; i < 50; ++i) {
    baseline.push_back(probe_health());
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }

  std::atomic<bool> done{false};
  json beat_reply;
  long beat_status = 0;
  double beat_ms = 0;
  std::thread beat([&] {
    Api worker{broker.url()};
    const auto t0 = Clock::now();
    const auto r = worker.post("/ojs/v1/workers/heartbeat", {{"worker_id", "w1"}, {"active_jobs", ids}});
    beat_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    beat_status = r.status;
    beat_reply = r.body;
    done = true;
  });
  std::vector<double> during;  // /health latencies while the heartbeat runs (ms)
  while (!done) {
    const double ms = probe_health();
    if (!done) during.push_back(ms);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  beat.join();
  ASSERT_EQ(beat_status, 200) << beat_reply.dump();
  ASSERT_EQ(beat_reply["jobs_extended"].size(), static_cast<std::size_t>(kIds));
  ASSERT_FALSE(during.empty()) << "the heartbeat finished before /health was asked once";
  auto quantile = [](std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())))];
  };
  const double base_p50 = quantile(baseline, 0.5), p50 = quantile(during, 0.5), p99 = quantile(during, 0.99);
  const double worst = *std::max_element(during.begin(), during.end());
  std::printf("[ store ] /health before: p50 %.2f ms; during a %d-id heartbeat of %.0f ms: %zu probes, p50 %.2f ms, p99 %.1f ms, "
              "worst %.1f ms\n",
              base_p50, kIds, beat_ms, during.size(), p50, p99, worst);
  // Judged against this run, not a wall time: on a loaded CPU every probe is slower,
  // but a heartbeat that held Redis or the request threads would leave /health
  // waiting for most of the heartbeat, answering a handful of times at best.
  EXPECT_GE(during.size(), 5u) << "/health answered only " << during.size() << " times in a " << beat_ms << " ms heartbeat";
  EXPECT_LT(worst, beat_ms / 4) << "one /health waited " << worst << " ms of a " << beat_ms << " ms heartbeat";
  EXPECT_LT(p50, std::max(50.0, 10 * base_p50)) << "the typical /health slowed from " << base_p50 << " ms to " << p50 << " ms";
}

// A FETCH whose classes have no waiting job decides from the snapshot
// (the class-head index names no head for them) and runs no script and reads no
// ready set; a new job is still claimed at once.
TEST(Store, AFetchFromEmptyClassesRunsNoScriptUntilAJobArrives) {
  RedisServer redis;
  // The preemption pass reads class heads too, and the maintenance pass settles the
  // two ACKs' journal lines (a script call of its own, settle.lua) whenever its
  // second comes: keep both out of the count.
  BrokerProcess broker{redis.url(), {"--preemption-interval-ms", "600000", "--maintenance-interval-ms", "0"}};
  Api api{broker.url()};
  const json caps = {{"capabilities", example_worker("dgx-h100")}};
  for (int gb : {1, 2}) api.push(ml_job("skip", {{"ext_ml_gpu_count", 1}, {"ext_ml_gpu_memory_gb", gb}}));
  for (int i = 0; i < 2; ++i) {
    const auto jobs = api.fetch({"skip"}, "w", 1, caps);
    ASSERT_EQ(jobs.size(), 1u);
    ASSERT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", jobs[0]["id"]}, {"worker_id", "w"}}).status, 200);
  }
  EXPECT_TRUE(api.fetch({"skip"}, "w", 1, caps).empty());  // this claim finds both classes empty

  RedisProbe probe(redis.port());
  probe.run({"CONFIG", "RESETSTAT"});
  constexpr int kFetches = 20;
  for (int i = 0; i < kFetches; ++i) EXPECT_TRUE(api.fetch({"skip"}, "w", 1, caps).empty());
  EXPECT_EQ(command_calls(probe, "fcall"), kFetches)
      << "the contact's held_jobs.lua only: nothing to take, no claim script (before the C++ decision: two per FETCH)";
  // The one ZRANGE a FETCH sends is the class-head index's page, read in the
  // contact's pipeline (FetchService::FirstPage): no ready set is read.
  EXPECT_EQ(command_calls(probe, "zrange"), kFetches) << "no ready set read, only the head index's page";

  const auto id = api.push(ml_job("skip", {{"ext_ml_gpu_count", 1}, {"ext_ml_gpu_memory_gb", 2}}));
  const auto jobs = api.fetch({"skip"}, "w", 1, caps);
  ASSERT_EQ(jobs.size(), 1u) << "a job pushed into a class known empty must be claimed";
  EXPECT_EQ(jobs[0]["id"], id);
}

// ACK and NACK of a job this broker handed out skip the job-directory
// read (a job never changes queue); another broker looks it up.
TEST(Store, AckOfAJobThisBrokerHandedOutSkipsTheDirectoryRead) {
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--preemption-interval-ms", "600000"}};
  BrokerProcess other{redis.url(), {"--preemption-interval-ms", "600000"}};
  Api api{broker.url()}, api2{other.url()};
  constexpr int kJobs = 10;
  for (int i = 0; i < kJobs + 1; ++i) api.push(job_in("dir"));
  std::vector<std::string> held;
  for (int i = 0; i < kJobs; ++i) {
    const auto jobs = api.fetch({"dir"}, "w", 1);
    ASSERT_EQ(jobs.size(), 1u);
    held.push_back(jobs[0]["id"]);
  }
  RedisProbe probe(redis.port());
  probe.run({"CONFIG", "RESETSTAT"});
  for (const auto& id : held) {
    const auto r = api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "w"}});
    ASSERT_EQ(r.status, 200) << r.body.dump();
    EXPECT_EQ(r.body["state"], "completed");
  }
  EXPECT_EQ(command_calls(probe, "hget"), 0) << "an ACK read the job directory (ojs:job-queue) for a job this broker handed out";
  // Handed out by one broker, acknowledged through another: looked up, still completed.
  const auto jobs = api.fetch({"dir"}, "w", 1);
  ASSERT_EQ(jobs.size(), 1u);
  const auto r = api2.post("/ojs/v1/workers/ack", {{"job_id", jobs[0]["id"]}, {"worker_id", "w"}});
  ASSERT_EQ(r.status, 200) << r.body.dump();
  EXPECT_EQ(r.body["state"], "completed");
}

// claim and ack reply with the job hash as they read it plus what they changed
// (_lib.lua job_reply: a later pair overrides, a nil deletes): the job a FETCH or an
// ACK returns must equal the job as stored right after, deleted fields included.
TEST(Store, ClaimAndAckRepliesEqualTheStoredJobAfterTheTransition) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  json job = job_in("replies");
  job["options"]["retry"] = {{"max_attempts", 3}, {"initial_interval", "PT0S"}, {"backoff_coefficient", 1.0}, {"jitter", false}};
  const auto id = api.push(job);
  auto first = api.fetch({"replies"}, "w", 1);
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(api.post("/ojs/v1/workers/nack", {{"job_id", id}, {"worker_id", "w"}, {"error", {{"code", "boom"}, {"message", "first try"}}}}).status, 200);

  auto second = api.fetch({"replies"}, "w", 1);  // the retry: attempt 2, the first attempt's error still shown
  ASSERT_EQ(second.size(), 1u);
  auto stored = api.get("/ojs/v1/jobs/" + id).body["job"];
  EXPECT_EQ(second[0], stored) << "FETCH reply " << second[0].dump() << "\nstored " << stored.dump();
  EXPECT_EQ(second[0]["attempt"], 2);
  EXPECT_EQ(second[0]["state"], "active");

  const auto acked = api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "w"}, {"result", {{"ok", true}}}});
  ASSERT_EQ(acked.status, 200) << acked.body.dump();
  stored = api.get("/ojs/v1/jobs/" + id).body["job"];
  EXPECT_EQ(acked.body["job"], stored) << "ACK reply " << acked.body["job"].dump() << "\nstored " << stored.dump();
  EXPECT_FALSE(acked.body["job"].contains("error")) << "ACK deletes the last attempt's error";
  EXPECT_EQ(acked.body["job"]["result"], json({{"ok", true}}));
}

// PUSH checks --max-queues only for a queue it has not seen exist lately: a PUSH to
// a known queue costs no round trip for the check.
TEST(Store, PushToAKnownQueueSkipsTheQueueCountCheck) {
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--max-queues", "5"}};
  Api api{broker.url()};
  api.push(job_in("known"));  // creates it
  api.push(job_in("known"));  // sees it exist
  RedisProbe probe(redis.port());
  probe.run({"CONFIG", "RESETSTAT"});
  for (int i = 0; i < 10; ++i) api.push(job_in("known"));
  EXPECT_EQ(command_calls(probe, "hexists"), 0) << "a PUSH to a known queue re-checked that it exists";
  // The bound still holds for new queues.
  for (int i = 0; i < 4; ++i) api.push(job_in("new-" + std::to_string(i)));
  const auto r = api.post("/ojs/v1/jobs", job_in("one-too-many"));
  EXPECT_EQ(r.status, 422) << r.body.dump();
  EXPECT_EQ(r.body["error"]["details"]["limit"], "max_queues") << r.body.dump();
}

// A number of INFO stats (total_reads_processed: the read events Redis served, one
// per round trip a client makes).
long long info_stat(RedisProbe& probe, const std::string& name) {
  const auto info = probe.run({"INFO", "stats"})[0];
  const auto at = info.find(name + ":");
  if (at == std::string::npos) throw std::runtime_error("INFO stats lacks " + name);
  return std::stoll(info.substr(at + name.size() + 1));
}

// PUSH is one round trip: the queue config comes from the broker's cache (push.lua
// checks its version), and the directory entry of the id the broker minted rides in
// the script's pipeline. Redis counts the read events it serves; the background
// loops' own share is measured over an equal idle spell and taken off.
TEST(Store, PushIsOneRoundTrip) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  api.push(job_in("one-trip"));  // creates the queue, caches its config
  RedisProbe probe(redis.port());
  constexpr int kPushes = 100;
  probe.run({"CONFIG", "RESETSTAT"});
  auto reads = info_stat(probe, "total_reads_processed");
  const auto started = Clock::now();
  for (int i = 0; i < kPushes; ++i) api.push(job_in("one-trip"));
  const auto spell = Clock::now() - started;
  const auto push_reads = info_stat(probe, "total_reads_processed") - reads - 1;  // less the INFO itself
  // push.lua reads the config once (version and depth bound in one HMGET); a second
  // read per PUSH (the broker's own, or the script's twice) passes the bound.
  EXPECT_LT(command_calls(probe, "hmget") + command_calls(probe, "hget"), kPushes * 3 / 2)
      << "PUSH read the queue config";  // (background loops may read)
  // push.lua's own HSETNX of the class, and one directory write (the queue's entry is known).
  EXPECT_LT(command_calls(probe, "hsetnx"), kPushes * 5 / 2) << "PUSH wrote the queue's directory entry again";
  reads = info_stat(probe, "total_reads_processed");
  std::this_thread::sleep_for(spell);
  const auto idle_reads = info_stat(probe, "total_reads_processed") - reads - 1;
  EXPECT_LE(push_reads - idle_reads, kPushes * 3 / 2) << "round trips for " << kPushes << " PUSHes (" << push_reads
                                                       << " read events, " << idle_reads << " while idle)";
  std::printf("%d PUSHes: %lld read events, %lld in an idle spell as long\n", kPushes, push_reads, idle_reads);
}

// The maintenance loop runs the promote and gang-expiry scripts only for queues with
// something due (one pipeline of cheap reads first): an idle queue costs no script,
// and a scheduled job still becomes available without any FETCH.
TEST(Store, MaintenanceRunsNoScriptForAQueueWithNothingDue) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  for (const auto* q : {"idle-a", "idle-b", "idle-c"}) api.push(job_in(q));
  std::string seen;
  std::thread monitor([&] { seen = run_process({"timeout", "2", "redis-cli", "-p", std::to_string(redis.port()), "monitor"}, 10).output; });
  monitor.join();
  std::size_t scripts = 0;
  for (const auto* first_key : {"\"ojs:{idle-a}:delayed\"", "\"ojs:{idle-a}:gangs\""})
    for (auto at = seen.find(first_key); at != std::string::npos; at = seen.find(first_key, at + 1))
      if (seen.rfind("\"FCALL\"", at) != std::string::npos && seen.rfind("\"FCALL\"", at) > seen.rfind('\n', at)) ++scripts;
  EXPECT_EQ(scripts, 0u) << "about ten maintenance passes ran in those two seconds";
  EXPECT_NE(seen.find("\"ZRANGEBYSCORE\" \"ojs:{idle-a}:delayed\""), std::string::npos) << "the due check itself ran";

  // Scheduled an hour ahead, so that a loaded machine still finds it scheduled, then
  // made due as time would make it (500 ms ahead raced the GET under load).
  json later = job_in("idle-a");
  later["scheduled_at"] = iso_in(std::chrono::hours(1));
  const auto id = api.push(later);
  ASSERT_EQ(api.get("/ojs/v1/jobs/" + id).body["job"]["state"], "scheduled");
  redis_lines(redis, {"ZADD", "ojs:{idle-a}:delayed", "0", id});
  EXPECT_EQ(wait_for_state(api, id, "available", 15000)["state"], "available") << "promoted by maintenance, no FETCH";
}

// --maintenance-interval-ms 0: no maintenance pass at all, not even the first one at
// start, which a long interval still runs (at once, beside the first requests: tests
// that count what requests send to Redis turn the loop off this way, held_sets_test).
TEST(Store, AMaintenanceIntervalOfZeroRunsNoPassAtAll) {
  RedisServer redis;
  BrokerProcess off{redis.url(), {"--maintenance-interval-ms", "0"}};
  Api api{off.url()};
  json later = job_in("off-q");
  later["scheduled_at"] = iso_in(std::chrono::hours(1));  // a PUSH slowed down (load) still finds it ahead
  const auto id = api.push(later);
  ASSERT_EQ(api.get("/ojs/v1/jobs/" + id).body["job"]["state"], "scheduled");
  redis_lines(redis, {"ZADD", "ojs:{off-q}:delayed", "0", id});  // due now, as time would make it
  std::this_thread::sleep_for(std::chrono::seconds(1));  // a pass would promote it at once
  EXPECT_EQ(api.get("/ojs/v1/jobs/" + id).body["job"]["state"], "scheduled") << "no pass ran";

  BrokerProcess hourly{redis.url(), {"--maintenance-interval-ms", "3600000"}};
  EXPECT_EQ(wait_for_state(api, id, "available", 15000)["state"], "available") << "the first pass of a long interval promotes it";
}
