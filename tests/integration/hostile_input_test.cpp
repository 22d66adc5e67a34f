// Hostile input: each reproduction that once crashed, stalled or
// corrupted the broker now gets a 4xx or the right behaviour, and the broker
// stays up. Real redis-server, real broker, raw HTTP over loopback.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <thread>

#include "ojs/client/http_client.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

json job(const std::string& queue, json options = json::object()) {
  options["queue"] = queue;
  return {{"type", "hard.task"}, {"args", json::array()}, {"options", options}};
}

// A JSON text nested `depth` arrays deep (built as text: building it as a json
// value would recurse in the test itself).
std::string nested_array(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

bool broker_up(const std::string& url) {
  ojs::HttpClient c({url});
  return c.get("/ojs/v1/health").status == 200;
}

bool wait_for(const std::function<bool()>& condition, int seconds = 30) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return condition();
}

}  // namespace

class HostileInput : public ::testing::Test {
 protected:
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  ojs::HttpClient raw{{broker.url()}};
};

// #1: invalid UTF-8 in a path or query once killed the broker (json type_error 316
// while rendering an error that echoed the path, outside any try).
TEST_F(HostileInput, InvalidUtf8InPathOrQueryIsRefusedAndTheBrokerStaysUp) {
  const std::vector<std::pair<std::string, std::string>> probes = {
      {"GET", "/%ff"},
      {"PATCH", "/ojs/v1/jobs/%ff"},
      {"GET", "/ojs/v1/jobs/%ff"},
      {"DELETE", "/ojs/v1/jobs/%c3%28"},
      {"POST", "/ojs/v1/dead-letter/%ff/retry"},
      {"DELETE", "/ojs/v1/admin/reservations/%ff"},
      {"GET", "/ojs/v1/admin/queues/q/jobs?state=%ff"},
      {"GET", "/ojs/v1/%ed%a0%80"},  // an encoded surrogate
  };
  for (const auto& [method, path] : probes) {
    const auto r = raw.request(method, path, "{}");
    EXPECT_GE(r.status, 400) << method << " " << path;
    EXPECT_LT(r.status, 500) << method << " " << path << ": " << r.body;
    EXPECT_TRUE(json::accept(r.body)) << r.body;
    ASSERT_TRUE(broker_up(broker.url())) << "broker died on " << method << " " << path;
  }
  // Valid multi-byte UTF-8 is still routed normally (to the handler: no such job).
  EXPECT_EQ(raw.get("/ojs/v1/jobs/%c3%a9").status, 404);
  EXPECT_EQ(raw.get("/ojs/v1/nothing-%c3%a9").status, 404);
}

// #2: ~80,000 nested arrays anywhere in a body once segfaulted the broker.
TEST_F(HostileInput, DeeplyNestedBodiesAreRefusedWithTheDepthRule) {
  const auto id = api.push(job("hard-deep"));
  api.fetch({"hard-deep"}, "w1");
  const std::string deep = nested_array(80000);
  const std::vector<std::pair<std::string, std::string>> probes = {
      {"/ojs/v1/jobs", R"({"type":"hard.task","args":[],"x":)" + deep + "}"},
      {"/ojs/v1/workers/fetch", R"({"queues":["hard-deep"],"worker_id":"w1","capabilities":{"gpu":)" + deep + "}}"},
      {"/ojs/v1/workers/ack", R"({"job_id":")" + id + R"(","result":)" + deep + "}"},
      {"/ojs/v1/workers/nack", R"({"job_id":")" + id + R"(","error":{"message":"x","details":)" + deep + "}}"},
      {"/ojs/v1/jobs/" + id + "/checkpoint", R"({"step":1,"storage_key":"k/1","metrics":{"m":)" + deep + "}}"},
  };
  for (const auto& [path, body] : probes) {
    const auto r = raw.post(path, body);
    EXPECT_EQ(r.status, 400) << path << ": " << r.body.substr(0, 300);
    const auto err = json::parse(r.body, nullptr, false);
    EXPECT_EQ(err["error"]["details"]["field"], "body") << r.body.substr(0, 300);
    ASSERT_TRUE(broker_up(broker.url())) << "broker died on " << path;
  }
  // 64 levels are within the bound.
  EXPECT_EQ(raw.post("/ojs/v1/jobs", R"({"type":"hard.task","args":[],"x":)" + nested_array(60) + "}").status, 201);
  EXPECT_EQ(api.get("/ojs/v1/jobs/" + id).status, 200);
}

// #3: a 10^20-day interval was stored as a negative duration and later threw in the reaper.
TEST_F(HostileInput, OverflowingDurationsAndTimesAreRefusedNamingTheField) {
  const std::vector<std::pair<json, std::string>> probes = {
      {{{"retry", {{"initial_interval", "P99999999999999999999D"}}}}, "retry.initial_interval"},
      {{{"retry", {{"max_interval", "PT1e400S"}}}}, "retry.max_interval"},
      {{{"scheduled_at", "+P99999999999999999999D"}}, "scheduled_at"},
      {{{"visibility_timeout", "P999999999D"}}, "visibility_timeout"},
      {{{"timeout_ms", 9223372036854775807LL}}, "timeout_ms"},
      {{{"visibility_timeout_ms", 9223372036854775807LL}}, "visibility_timeout_ms"},
      {{{"scheduled_at", "0001-01-01T00:00:00Z"}}, "scheduled_at"},
  };
  for (const auto& [options, field] : probes) {
    const auto r = api.post("/ojs/v1/jobs", job("hard-dur", options));
    // An overflowing value is a format error wherever it is, the retry policy included (#47.23).
    EXPECT_EQ(r.status, 400) << options.dump() << ": " << r.body.dump();
    EXPECT_EQ(r.body["error"]["details"]["field"], field) << r.body.dump();
  }
  // Numbers at the worker edge too.
  EXPECT_EQ(api.post("/ojs/v1/admin/reservations", {{"id", "r1"}, {"worker_ids", {"w1"}}, {"ttl_s", 9223372036854775807LL}}).body["error"]["details"]["field"],
            "ttl_s");
  EXPECT_TRUE(broker_up(broker.url()));
}

// #3 (maintenance): one poison job (its retry policy no longer parses) once aborted
// the reaper for every queue after it. Now it is dead-lettered with the parse
// error and the other queues' expired reservations are still reclaimed.
TEST_F(HostileInput, APoisonJobIsDeadLetteredAndMaintenanceGoesOn) {
  const auto poison = api.push(job("hard-a-poison", {{"visibility_timeout_ms", 300}}));
  const auto healthy = api.push(job("hard-b-healthy", {{"visibility_timeout_ms", 300}, {"retry", {{"max_attempts", 5}}}}));
  // Corrupt the stored document the way the old overflow did, before the job is
  // fetched: done after, it raced the 300 ms reservation (a loaded machine reclaimed
  // the job with its sound policy first, and it then waited, available, for ever).
  json stored = {{"type", "hard.task"}, {"args", json::array()}, {"queue", "hard-a-poison"},
                 {"retry", {{"initial_interval", "PT-9223372036854776.000S"}}}};
  const auto set = run_process({"redis-cli", "-p", std::to_string(redis.port()), "HSET", "ojs:{hard-a-poison}:job:" + poison, "doc",
                                stored.dump()}, 10);
  ASSERT_EQ(set.exit_code, 0) << set.output;
  ASSERT_EQ(api.fetch({"hard-a-poison"}, "w1").size(), 1u);
  ASSERT_EQ(api.fetch({"hard-b-healthy"}, "w1").size(), 1u);

  ASSERT_TRUE(wait_for([&] { return api.get("/ojs/v1/jobs/" + healthy).body["job"]["state"] != "active"; }))
      << "the healthy queue's expired reservation was never reclaimed";
  ASSERT_TRUE(wait_for([&] { return api.get("/ojs/v1/jobs/" + poison).body["job"]["state"] == "discarded"; }))
      << api.get("/ojs/v1/jobs/" + poison).body.dump();
  const auto dead = api.get("/ojs/v1/dead-letter?queue=hard-a-poison").body;
  ASSERT_NE(dead.dump().find(poison), std::string::npos) << dead.dump();
  const auto info = api.get("/ojs/v1/jobs/" + poison).body["job"];
  EXPECT_EQ(info["error"]["code"], "invalid_job") << info.dump();
  EXPECT_NE(info["error"]["message"].get<std::string>().find("initial_interval"), std::string::npos) << info.dump();
}

// #4 and #11: worker ids are validated before anything is written, so
// "victim:jobs" cannot name worker victim's load hash, and a bad admin id
// leaves no state behind that breaks the worker list.
TEST_F(HostileInput, WorkerIdsThatCouldShareAKeyAreRefused) {
  const json caps = {{"gpu", {{"count", 1}, {"model", "A100"}, {"memory_gb", 80}}}};
  api.push(job("hard-ids"));
  for (const std::string& bad : std::vector<std::string>{"victim:jobs", "a/b", "", "-x", "sp ace", std::string(129, 'w')}) {
    const auto r = api.post("/ojs/v1/workers/fetch", {{"queues", {"hard-ids"}}, {"worker_id", bad}, {"capabilities", caps}});
    EXPECT_EQ(r.status, 400) << bad;
    EXPECT_EQ(r.body["error"]["details"]["field"], "worker_id");
    EXPECT_EQ(api.post("/ojs/v1/workers/heartbeat", {{"worker_id", bad}}).status, 400) << bad;
  }
  // victim's own FETCH still works and claims the job.
  auto got = api.post("/ojs/v1/workers/fetch", {{"queues", {"hard-ids"}}, {"worker_id", "victim"}, {"capabilities", caps}});
  ASSERT_EQ(got.status, 200) << got.body.dump();
  EXPECT_EQ(got.body["jobs"].size(), 1u);

  for (const std::string bad : {"%ff", "a:b", "%20x"}) {
    const auto r = raw.post("/ojs/v1/admin/workers/" + bad + "/quiet", "");
    EXPECT_EQ(r.status, 400) << bad << ": " << r.body;
  }
  EXPECT_EQ(raw.post("/ojs/v1/admin/workers/x%2Fy/quiet", "").status, 404);  // decodes to another path
  EXPECT_EQ(api.get("/ojs/v1/admin/workers").status, 200);
  EXPECT_EQ(api.get("/ojs/v1/admin/overview").status, 200);
  EXPECT_EQ(api.post("/ojs/v1/admin/workers/gpu-node-1.example_a@b/quiet", json::object()).status, 404);  // never in contact
  api.post("/ojs/v1/workers/heartbeat", {{"worker_id", "gpu-node-1.example_a@b"}});
  EXPECT_EQ(api.post("/ojs/v1/admin/workers/gpu-node-1.example_a@b/quiet", json::object()).status, 200);
}

// #13: a broker restarted at once after a SIGKILL waited on nothing, so the old
// embedded redis-server, still exiting, could unlink the new one's socket. The
// data dir is now locked: a second live broker is refused with a clear message,
// and a restart after SIGKILL comes up.
TEST(EmbeddedRedisLock, ASecondBrokerOnTheSameDataDirIsRefusedAndARestartAfterKillComesUp) {
  const std::string dir = make_temp_dir("lock") + "/data";
  auto first = std::make_unique<BrokerProcess>("", std::vector<std::string>{"--data-dir", dir});
  const auto id = Api(first->url()).push(job("hard-lock"));
  try {
    BrokerProcess second("", {"--data-dir", dir});
    FAIL() << "a second broker started on a data dir in use";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("is in use by another broker"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(broker_up(first->url())) << "the first broker lost its redis";
  EXPECT_EQ(Api(first->url()).get("/ojs/v1/jobs/" + id).status, 200);

  for (int round = 0; round < 3; ++round) {
    first->kill9();
    first = std::make_unique<BrokerProcess>("", std::vector<std::string>{"--data-dir", dir});
    EXPECT_EQ(Api(first->url()).get("/ojs/v1/jobs/" + id).status, 200) << "round " << round;
  }
  first.reset();
  std::error_code ec;
  std::filesystem::remove_all(std::filesystem::path(dir).parent_path(), ec);
}

// #6 and #7: checkpoint URIs are parsed and normalised before the prefix check
// (at PUSH and at commit), and steps are range-checked instead of wrapping.
TEST(HostileInputCheckpoints, UrisAreNormalisedBeforeThePrefixCheckAndStepsAreRangeChecked) {
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--checkpoint-prefix", "s3://allowed/"}};
  Api api{broker.url()};
  auto ckpt_job = [](const std::string& uri) {
    return json{{"type", "hard.train"}, {"args", json::array()}, {"options", {{"queue", "hard-ckpt"}}},
                {"ext_ml_checkpoint_enabled", true}, {"ext_ml_checkpoint_storage_uri", uri}};
  };
  for (const std::string bad : {"s3:/evil/x/", "s3:evil/x/", "file:/etc/passwd/", "//evil/x/", "s3://allowed/../../evil/",
                                "s3://allowedx/", "s3://allowed/a/../../evil/", "s3://evil/allowed/"}) {
    const auto r = api.post("/ojs/v1/jobs", ckpt_job(bad));
    EXPECT_EQ(r.status, 400) << bad << ": " << r.body.dump();
    EXPECT_EQ(r.body["error"]["details"]["field"], "ext_ml_checkpoint_storage_uri") << bad;
  }
  const auto id = api.push(ckpt_job("s3://allowed/run-1/"));
  ASSERT_EQ(api.fetch({"hard-ckpt"}, "w1").size(), 1u);
  const std::string path = "/ojs/v1/jobs/" + id + "/checkpoint";
  for (const std::string bad : {"s3:/evil/x", "s3:evil/x", "file:/etc/passwd", "//evil/x", "s3://allowed/../../evil/",
                                "../escape", "a/../../b", "/etc/passwd", "s3://allowedx/c"}) {
    const auto r = api.post(path, {{"worker_id", "w1"}, {"step", 1}, {"storage_key", bad}});
    EXPECT_EQ(r.status, 400) << bad << ": " << r.body.dump();
    EXPECT_EQ(r.body["error"]["details"]["field"], "storage_key") << bad;
  }
  auto ok = api.post(path, {{"worker_id", "w1"}, {"step", 2}, {"storage_key", "s3://allowed/run-1/./ckpt//2"}});
  ASSERT_EQ(ok.status, 200) << ok.body.dump();
  EXPECT_EQ(ok.body["last_checkpoint"]["storage_key"], "s3://allowed/run-1/ckpt/2");
  EXPECT_EQ(api.post(path, {{"worker_id", "w1"}, {"step", 3}, {"storage_key", "ckpt/3"}}).status, 200);

  // #7: 2^64-1 was stored as -2^63.
  auto huge = api.post(path, {{"worker_id", "w1"}, {"step", 18446744073709551615ULL}, {"storage_key", "ckpt/4"}});
  EXPECT_EQ(huge.status, 400) << huge.body.dump();
  EXPECT_EQ(huge.body["error"]["details"]["field"], "step");
  EXPECT_EQ(api.post(path, {{"worker_id", "w1"}, {"step", 1e300}, {"storage_key", "ckpt/4"}}).status, 400);
  EXPECT_EQ(api.post(path, {{"worker_id", "w1"}, {"step", -1}, {"storage_key", "ckpt/4"}}).status, 400);
  auto max = api.post(path, {{"worker_id", "w1"}, {"step", 9007199254740991LL}, {"storage_key", "ckpt/5"}});
  ASSERT_EQ(max.status, 200) << max.body.dump();
  EXPECT_EQ(max.body["last_checkpoint"]["step"], 9007199254740991LL);
}

// #8: 100k ids in one heartbeat and 200k queues in one FETCH stalled the broker.
TEST_F(HostileInput, PerRequestBoundsOnHeartbeatIdsAndFetchQueues) {
  json ids = json::array();
  for (int i = 0; i < 1001; ++i) ids.push_back("0196a0f0-0000-7000-8000-" + std::string(12 - std::to_string(i).size(), '0') + std::to_string(i));
  auto beat = api.post("/ojs/v1/workers/heartbeat", {{"worker_id", "w1"}, {"active_jobs", ids}});
  EXPECT_EQ(beat.status, 400) << beat.body.dump().substr(0, 300);
  EXPECT_EQ(beat.body["error"]["details"]["field"], "active_jobs");
  ids.erase(ids.begin());
  EXPECT_EQ(api.post("/ojs/v1/workers/heartbeat", {{"worker_id", "w1"}, {"active_jobs", ids}}).status, 200);

  json queues = json::array();
  for (int i = 0; i < 65; ++i) queues.push_back("hard-many-" + std::to_string(i));
  auto fetch = api.post("/ojs/v1/workers/fetch", {{"queues", queues}, {"worker_id", "w1"}});
  EXPECT_EQ(fetch.status, 400);
  EXPECT_EQ(fetch.body["error"]["details"]["field"], "queues");
  queues.erase(queues.begin());
  EXPECT_EQ(api.post("/ojs/v1/workers/fetch", {{"queues", queues}, {"worker_id", "w1"}}).status, 200);
}

// #9: queues were unbounded and could not be deleted.
TEST(HostileInputQueues, QueueCountIsBoundedAndAnEmptyQueueCanBeDeleted) {
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--max-queues", "3"}};
  Api api{broker.url()};
  const auto waiting = api.push(job("hard-q1"));
  api.push(job("hard-q2"));
  const auto cancelled = api.push(job("hard-q3"));
  const auto cancelled2 = api.push(job("hard-q3"));  // a second PUSH: this broker now knows hard-q3 exists
  auto over = api.post("/ojs/v1/jobs", job("hard-q4"));
  EXPECT_EQ(over.status, 422) << over.body.dump();
  EXPECT_EQ(over.body["error"]["details"]["field"], "queue");
  EXPECT_EQ(over.body["error"]["details"]["limit"], "max_queues");
  EXPECT_EQ(api.push(job("hard-q1")).size(), 36u) << "an existing queue still takes jobs";

  EXPECT_EQ(api.call("DELETE", "/ojs/v1/admin/queues/hard-q1").status, 409) << "a queue with a waiting job";
  EXPECT_EQ(api.call("DELETE", "/ojs/v1/admin/queues/nope").status, 404);
  ASSERT_EQ(api.call("DELETE", "/ojs/v1/jobs/" + cancelled).status, 200);
  ASSERT_EQ(api.call("DELETE", "/ojs/v1/jobs/" + cancelled2).status, 200);
  auto del = api.call("DELETE", "/ojs/v1/admin/queues/hard-q3");
  ASSERT_EQ(del.status, 200) << del.body.dump();
  EXPECT_EQ(api.get("/ojs/v1/queues/hard-q3/stats").status, 404);
  EXPECT_EQ(api.post("/ojs/v1/jobs", job("hard-q4")).status, 201);
  EXPECT_EQ(api.post("/ojs/v1/jobs", job("hard-q3")).status, 422) << "a deleted queue counts against the bound again";
  EXPECT_EQ(api.get("/ojs/v1/jobs/" + waiting).body["job"]["state"], "available");
}

// #10: expires_at was accepted and ignored; an expired job is never delivered
// (one already past at PUSH is refused; expiry_test.cpp covers the rest).
TEST_F(HostileInput, AnExpiredJobIsDiscardedAndNeverDelivered) {
  const auto expired = api.post("/ojs/v1/jobs", job("hard-exp", {{"expires_at", "2020-01-01T00:00:00Z"}}));
  EXPECT_EQ(expired.status, 400) << expired.body.dump();
  EXPECT_EQ(expired.body["error"]["details"]["field"], "expires_at");
  const auto fresh = api.push(job("hard-exp", {{"expires_at", "2999-01-01T00:00:00Z"}}));
  const auto got = api.fetch({"hard-exp"}, "w1");
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["id"], fresh);
  EXPECT_EQ(api.fetch({"hard-exp"}, "w1").size(), 0u);
}

// #12: ml_limits.max_timeout_seconds was bypassed by a job without a timeout.
TEST_F(HostileInput, MaxTimeoutSecondsAppliesToAJobWithoutATimeout) {
  ASSERT_EQ(api.call("PUT", "/ojs/v1/admin/queues/hard-to/config", {{"ml_limits", {{"max_timeout_seconds", 60}}}}).status, 200);
  const auto none = api.push(job("hard-to"));
  EXPECT_EQ(api.get("/ojs/v1/jobs/" + none).body["job"]["timeout_ms"], 60000);
  const auto zero = api.push(job("hard-to", {{"timeout_ms", 0}}));
  EXPECT_EQ(api.get("/ojs/v1/jobs/" + zero).body["job"]["timeout_ms"], 60000);
  const auto shorter = api.push(job("hard-to", {{"timeout_ms", 5000}}));
  EXPECT_EQ(api.get("/ojs/v1/jobs/" + shorter).body["job"]["timeout_ms"], 5000);
  EXPECT_EQ(api.post("/ojs/v1/jobs", job("hard-to", {{"timeout_ms", 120000}})).status, 422);
}
