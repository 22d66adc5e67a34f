// What a worker holds lives beside the jobs: the claim scripts list each claimed
// job in the worker's held set of that queue (keys.hpp held) and ack/fail take it
// out, in the same step as the transition. A FETCH that claims writes nothing after
// its claim, an ACK is its one script, and any broker reads the same load.
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <thread>

#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

// A one-line reply ("" for none).
std::string redis_cli(const RedisServer& redis, std::vector<std::string> argv) {
  const auto lines = redis_lines(redis, std::move(argv));
  return lines.empty() ? std::string() : lines.front();
}

// The commands clients sent (not those scripts ran) while `action` ran, as MONITOR saw them.
template <class Action>
std::vector<std::string> top_level_commands(const RedisServer& redis, Action action) {
  std::string seen;
  std::thread monitor([&] { seen = run_process({"timeout", "2", "redis-cli", "-p", std::to_string(redis.port()), "monitor"}, 10).output; });
  std::this_thread::sleep_for(std::chrono::milliseconds(600));  // MONITOR is attached
  action();
  monitor.join();
  std::vector<std::string> out;
  for (std::size_t at = 0, end; at < seen.size(); at = end + 1) {
    end = seen.find('\n', at);
    if (end == std::string::npos) end = seen.size();
    const auto line = seen.substr(at, end - at);
    if (line.find("[0 lua]") == std::string::npos && line.find('"') != std::string::npos) out.push_back(line);
  }
  return out;
}

std::size_t count_naming(const std::vector<std::string>& lines, const std::string& text) {
  std::size_t n = 0;
  for (const auto& l : lines) n += l.find(text) != std::string::npos;
  return n;
}

// Read events Redis has processed since it started (INFO stats): one per round trip
// of a client, however many commands it pipelined.
long long reads_processed(const RedisServer& redis) {
  for (const auto& line : redis_lines(redis, {"INFO", "stats"}))
    if (line.starts_with("total_reads_processed:")) return std::stoll(line.substr(22));
  return -1;
}

// The broker's round trips to Redis while a request runs, counted as Redis's read
// events. Redis 7.0 counts them for the whole server only (CLIENT LIST has no count
// per client), so everything else that reaches Redis is kept out of the count:
// - the broker's background passes: the tests turn them off (--maintenance-interval-ms 0).
//   A long interval does not: the first pass runs at start on its own thread, and on a
//   loaded machine it ran while the requests were counted (13 for 12, or fewer when
//   it fell on the measure of a reading);
// - the reading itself (redis-cli's connection), measured once;
// - the rewrite of the worker's diagnosis record: DiagnosisLog rewrites an unchanged
//   judgement 5 s after it last wrote it, in a round trip of its own at the end of the
//   FETCH. A request that meets it is seen by its record changing, and that round trip
//   is counted apart (refreshes()), so a slow run counts what a fast one does.
class RoundTrips {
 public:
  // `diagnosis`: the key of the record of the class the worker fetches (one class).
  RoundTrips(const RedisServer& redis, std::string diagnosis, std::string worker)
      : redis_(redis), diagnosis_(std::move(diagnosis)), worker_(std::move(worker)) {
    const long long idle = reads_processed(redis_);
    reading_ = reads_processed(redis_) - idle;
  }
  template <class Request>
  long long of(Request request) {
    const auto judged = redis_cli(redis_, {"HGET", diagnosis_, worker_});
    const long long before = reads_processed(redis_);
    request();
    long long reads = reads_processed(redis_) - before - reading_;
    if (redis_cli(redis_, {"HGET", diagnosis_, worker_}) != judged) {
      --reads;
      ++refreshes_;
    }
    return reads;
  }
  int refreshes() const { return refreshes_; }

 private:
  const RedisServer& redis_;
  std::string diagnosis_, worker_;
  long long reading_ = 0;
  int refreshes_ = 0;
};

// The key of the one diagnosis record of `queue` (its one requirement class).
std::string diagnosis_key(const RedisServer& redis, const std::string& queue) {
  const auto keys = redis_lines(redis, {"KEYS", "ojs:{" + queue + "}:diag:*"});
  return keys.size() == 1 ? keys.front() : std::string();
}

}  // namespace

TEST(HeldSets, AClaimIsListedByTheClaimScriptAndAnAckIsOneCommand) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  const json caps = example_worker("4xa100-pcie");
  api.fetch({"held-q"}, "held-w", 1, {{"capabilities", caps}});  // the worker's queue list is written here
  const auto id = api.push(ml_job("held-q", {{"ext_ml_gpu_count", 2}}));

  json got;
  const auto fetch_cmds = top_level_commands(redis, [&] { got = api.fetch({"held-q"}, "held-w", 1, {{"capabilities", caps}}); });
  ASSERT_EQ(got.size(), 1u) << got.dump();
  ASSERT_EQ(got[0]["id"], id);
  EXPECT_EQ(redis_cli(redis, {"SMEMBERS", "ojs:{held-q}:held:held-w"}), id) << "claim.lua lists the job it claimed";
  // Before: a HSET of ojs:{_global}:worker:held-w:jobs followed the claim, a round trip of its own.
  // The one command naming the job is its native read behind the claim script (the
  // document does not cross the Lua bridge: ClaimStore::commit).
  EXPECT_EQ(count_naming(fetch_cmds, id), 1u) << "only the claimed job's read-back names it";
  EXPECT_EQ(count_naming(fetch_cmds, "\"HGETALL\" \"ojs:{held-q}:job:" + id + "\""), 1u);
  EXPECT_EQ(count_naming(fetch_cmds, "\"HSET\" \"ojs:{_global}:worker:held-w:jobs\""), 0u);

  const auto ack_cmds = top_level_commands(redis, [&] {
    ASSERT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "held-w"}}).status, 200);
  });
  // The ack script (it empties the held set itself) and the job read back behind it in
  // the same round trip (JobStore::ack): no write of the worker's list of its own.
  EXPECT_EQ(count_naming(ack_cmds, id), 2u) << "the ack script and the job's read-back";
  EXPECT_EQ(count_naming(ack_cmds, "\"HGETALL\" \"ojs:{held-q}:job:" + id + "\""), 1u);
  EXPECT_EQ(redis_cli(redis, {"EXISTS", "ojs:{held-q}:held:held-w"}), "0");
}

// Broker B never handed this worker anything, and the worker's job is in a queue its
// FETCH through B does not name: B still counts it, from the worker's queue list.
TEST(HeldSets, AnotherBrokerCountsAJobHeldInAQueueTheFetchDoesNotName) {
  RedisServer redis;
  BrokerProcess a{redis.url()};
  BrokerProcess b{redis.url()};
  Api via_a{a.url()}, via_b{b.url()};
  const json caps = example_worker("4xa100-pcie");
  const auto big = via_a.push(ml_job("held-one", {{"ext_ml_gpu_count", 4}}));
  const auto got = via_a.fetch({"held-one"}, "held-box", 1, {{"capabilities", caps}});
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(got[0]["id"], big);

  via_b.push(ml_job("held-two", {{"ext_ml_gpu_count", 1}}));
  EXPECT_TRUE(via_b.fetch({"held-two"}, "held-box", 1, {{"capabilities", caps}}).empty())
      << "all 4 GPUs are taken by the job in held-one";
  ASSERT_EQ(via_a.post("/ojs/v1/workers/ack", {{"job_id", big}, {"worker_id", "held-box"}}).status, 200);
  EXPECT_EQ(via_b.fetch({"held-two"}, "held-box", 1, {{"capabilities", caps}}).size(), 1u) << "free again after the ACK";
}

// A held entry whose job ended by a path that does not empty the set (an admin's
// CANCEL) is dropped when read, and the worker's load is free again: at once for a
// job cancelled by an older broker, which kept no stop for its process; a job
// cancelled now weighs until its worker reports the process gone.
TEST(HeldSets, AnEntryOfAJobThatEndedElsewhereHealsWhenRead) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  const json caps = example_worker("4xa100-pcie");
  const auto id = api.push(ml_job("heal-q", {{"ext_ml_gpu_count", 4}}));
  ASSERT_EQ(api.fetch({"heal-q"}, "heal-w", 1, {{"capabilities", caps}}).size(), 1u);
  ASSERT_EQ(api.call("DELETE", "/ojs/v1/jobs/" + id).status, 200);
  EXPECT_EQ(redis_cli(redis, {"SMEMBERS", "ojs:{heal-q}:held:heal-w"}), id) << "cancel leaves the entry";
  api.push(ml_job("heal-q", {{"ext_ml_gpu_count", 4}}));
  EXPECT_TRUE(api.fetch({"heal-q"}, "heal-w", 1, {{"capabilities", caps}}).empty())
      << "the cancelled job's process may still run: its GPUs wait for the worker's report";
  redis_cli(redis, {"HDEL", "ojs:{heal-q}:job:" + id, "stop_action"});  // as an older broker cancelled it
  EXPECT_EQ(api.fetch({"heal-q"}, "heal-w", 1, {{"capabilities", caps}}).size(), 1u) << "the cancelled job weighs nothing";
  EXPECT_EQ(redis_cli(redis, {"SISMEMBER", "ojs:{heal-q}:held:heal-w", id}), "0") << "its entry was dropped when read";
}

// A job claimed under an older broker has a claim record in the worker's global
// hash (ojs:{_global}:worker:<id>:jobs): it still counts, and moves into the held sets.
TEST(HeldSets, AClaimRecordAnOlderBrokerWroteCountsAndMovesIntoTheHeldSet) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  const json caps = example_worker("4xa100-pcie");
  const auto id = api.push(ml_job("legacy-q", {{"ext_ml_gpu_count", 4}}));
  ASSERT_EQ(api.fetch({"legacy-q"}, "legacy-w", 1, {{"capabilities", caps}}).size(), 1u);
  // What the older broker left: the record in the hash, no held set, no queue list.
  redis_cli(redis, {"DEL", "ojs:{legacy-q}:held:legacy-w", "ojs:{_global}:worker:legacy-w:queues"});
  redis_cli(redis, {"HSET", "ojs:{_global}:worker:legacy-w:jobs", id,
                    R"({"queue":"legacy-q","gpus":4,"devices":[],"labels":{}})"});
  BrokerProcess upgraded{redis.url()};  // a broker that never saw this worker
  Api api2{upgraded.url()};
  api2.push(ml_job("legacy-other", {{"ext_ml_gpu_count", 1}}));
  EXPECT_TRUE(api2.fetch({"legacy-other"}, "legacy-w", 1, {{"capabilities", caps}}).empty()) << "the recorded job holds all 4 GPUs";
  EXPECT_EQ(redis_cli(redis, {"SMEMBERS", "ojs:{legacy-q}:held:legacy-w"}), id);
  EXPECT_EQ(redis_cli(redis, {"EXISTS", "ojs:{_global}:worker:legacy-w:jobs"}), "0") << "the old hash drained";
}

// A capability FETCH of a worker that holds jobs reaches Redis three times: the
// contact pipeline, which reads what the worker holds with what placement needs of
// each job (held_jobs.lua), the claim's snapshot (the heads it is decided over),
// then the commit. Before, the jobs' fields took a round trip of their own after
// the contact (their ids had to come first).
TEST(HeldSets, ACapabilityFetchOfAWorkerThatHoldsJobsIsThreeRoundTrips) {
  RedisServer redis;
  // No background pass reads Redis while the FETCHes are counted (RoundTrips).
  BrokerProcess broker{redis.url(), {"--maintenance-interval-ms", "0"}};
  Api api{broker.url()};
  const json caps = example_worker("dgx-h100");  // 8 GPUs: each FETCH below claims one more job
  constexpr int kFetches = 6;
  for (int i = 0; i <= kFetches; ++i) api.push(ml_job("trips-q", {{"ext_ml_gpu_count", 1}}));
  ASSERT_EQ(api.fetch({"trips-q"}, "trips-w", 1, {{"capabilities", caps}}).size(), 1u);  // it holds one job now
  const auto judged = diagnosis_key(redis, "trips-q");
  ASSERT_FALSE(judged.empty()) << "the FETCH recorded its judgement of the queue's one class";

  RoundTrips trips(redis, judged, "trips-w");
  long long reads = 0;
  for (int i = 0; i < kFetches; ++i) {
    std::size_t got = 0;
    reads += trips.of([&] { got = api.fetch({"trips-q"}, "trips-w", 1, {{"capabilities", caps}}).size(); });
    ASSERT_EQ(got, 1u);
  }
  EXPECT_EQ(redis_cli(redis, {"SCARD", "ojs:{trips-q}:held:trips-w"}), std::to_string(kFetches + 1));
  EXPECT_EQ(reads, 3 * kFetches) << "round trips to Redis over " << kFetches << " capability FETCHes ("
                                 << trips.refreshes() << " diagnosis rewrites counted apart)";
}

// The contact reads held jobs by a script (held_jobs.lua) in its pipeline: a Redis
// that lost the library (restarted without persistence, FUNCTION FLUSH) has it
// loaded again there, and the FETCH still counts what the worker holds.
TEST(HeldSets, AContactOnARedisWithoutTheLibraryLoadsItAndReadsHeldJobs) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  const json caps = example_worker("4xa100-pcie");
  api.push(ml_job("flush-q", {{"ext_ml_gpu_count", 3}}));
  ASSERT_EQ(api.fetch({"flush-q"}, "flush-w", 1, {{"capabilities", caps}}).size(), 1u);
  ASSERT_EQ(redis_lines(redis, {"FUNCTION", "FLUSH"}), std::vector<std::string>{"OK"});
  api.push(ml_job("flush-q", {{"ext_ml_gpu_count", 2}}));
  EXPECT_TRUE(api.fetch({"flush-q"}, "flush-w", 1, {{"capabilities", caps}}).empty()) << "3 of its 4 GPUs are held";
  api.push(ml_job("flush-q", {{"ext_ml_gpu_count", 1}}));
  EXPECT_EQ(api.fetch({"flush-q"}, "flush-w", 1, {{"capabilities", caps}}).size(), 1u) << "the one GPU left";
}

// ACK with `fetch` takes the same path as a FETCH for its fetch part (one contact,
// held jobs read in it): the ACK, the contact, the claim's snapshot and its commit,
// for a worker that still holds jobs after the ACK. Before, a round trip more read
// the held jobs.
TEST(HeldSets, AnAckWithFetchOfAWorkerThatStillHoldsJobsIsFourRoundTrips) {
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--maintenance-interval-ms", "0"}};
  Api api{broker.url()};
  const json caps = example_worker("dgx-h100");
  constexpr int kAcks = 4;
  for (int i = 0; i < kAcks + 2; ++i) api.push(ml_job("ackf-q", {{"ext_ml_gpu_count", 1}}));
  auto held = api.fetch({"ackf-q"}, "ackf-w", 2, {{"capabilities", caps}});  // it holds two jobs
  ASSERT_EQ(held.size(), 2u);
  const auto judged = diagnosis_key(redis, "ackf-q");
  ASSERT_FALSE(judged.empty()) << "the FETCH recorded its judgement of the queue's one class";

  const json next = {{"queues", {"ackf-q"}}, {"count", 1}, {"capabilities", caps}};
  RoundTrips trips(redis, judged, "ackf-w");
  long long reads = 0;
  for (int i = 0; i < kAcks; ++i) {
    Api::Reply r{};
    reads += trips.of([&] { r = api.post("/ojs/v1/workers/ack", {{"job_id", held[0]["id"]}, {"worker_id", "ackf-w"}, {"fetch", next}}); });
    ASSERT_EQ(r.status, 200) << r.body.dump();
    ASSERT_EQ(r.body["fetch"]["jobs"].size(), 1u) << r.body.dump();
    held.erase(held.begin());
    held.push_back(r.body["fetch"]["jobs"][0]);
  }
  EXPECT_EQ(reads, 4 * kAcks) << "round trips to Redis over " << kAcks << " ACKs with fetch (" << trips.refreshes()
                              << " diagnosis rewrites counted apart)";
}

// One FETCH that claims several jobs counts each claimed job in the worker's load
// before the next claim (FetchService reads a claimed job's requirements only when
// another claim follows): 4 GPUs hold two 2-GPU jobs on disjoint devices, not three.
TEST(HeldSets, OneFetchOfSeveralJobsCountsEachBeforeTheNext) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  const json caps = example_worker("4xa100-pcie");
  for (int i = 0; i < 3; ++i) api.push(ml_job("multi-q", {{"ext_ml_gpu_count", 2}}));
  const auto jobs = api.fetch({"multi-q"}, "multi-w", 3, {{"capabilities", caps}});
  ASSERT_EQ(jobs.size(), 2u) << "two 2-GPU jobs fill 4 GPUs: " << jobs.dump();
  std::set<int> devices;
  for (const auto& j : jobs)
    for (const auto& d : j["ext_ml_assigned_devices"]) EXPECT_TRUE(devices.insert(d.get<int>()).second) << jobs.dump();
  EXPECT_EQ(devices.size(), 4u);
}
