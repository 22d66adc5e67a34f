// The keys a claim and an ACK send Redis: a key costs the script call
// ~1.1k instructions, so the 11 workflow keys go only where a workflow's job needs
// them, and a job of a workflow still ends its step whichever path it takes: an ACK
// on a broker that did not claim it (ack.lua asks for the keys), an ACK on the
// broker that did (it knows), an expired step met by a claim (claim.lua stops
// before it and the broker calls again with the keys). The key counts are read
// from Redis's slow log with a threshold of 0: every command, with its arguments.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

// The FCALLs of one script since the log was reset: the number of keys each sent
// (the FCALL's third argument), oldest first. The function's name is the script's
// plus the library's suffix, '_' and 12 hex digits (broker/store/lua_scripts.cpp).
std::vector<int> fcall_key_counts(const RedisServer& redis, const std::string& script) {
  const auto lines = redis_lines(redis, {"SLOWLOG", "GET", "1000"});
  std::vector<int> newest_first;
  for (std::size_t i = 0; i + 2 < lines.size(); ++i)
    if (lines[i] == "FCALL" && lines[i + 1].rfind(script + "_", 0) == 0 && lines[i + 1].size() == script.size() + 13)
      newest_first.push_back(std::stoi(lines[i + 2]));
  return {newest_first.rbegin(), newest_first.rend()};
}

// The calls of `script` and the HGETALLs of job hash `key` sent since the log was
// reset, newest first (the slow log holds what clients sent, not what a script runs):
// "<script>" or "HGETALL" each.
std::vector<std::string> script_calls_and_reads(const RedisServer& redis, const std::string& script, const std::string& key) {
  std::vector<std::string> sent;
  const auto lines = redis_lines(redis, {"SLOWLOG", "GET", "1000"});
  for (std::size_t i = 0; i + 1 < lines.size(); ++i)
    if (lines[i] == "FCALL" && lines[i + 1].rfind(script + "_", 0) == 0) sent.push_back(script);
    else if (lines[i] == "HGETALL" && lines[i + 1] == key) sent.push_back("HGETALL");
  return sent;
}

void log_every_command(const RedisServer& redis) {
  redis_lines(redis, {"CONFIG", "SET", "slowlog-log-slower-than", "0"});
  redis_lines(redis, {"CONFIG", "SET", "slowlog-max-len", "1000"});
  redis_lines(redis, {"SLOWLOG", "RESET"});
}

json step(const std::string& type, const std::string& queue) {
  return {{"type", type}, {"args", json::array({type})}, {"options", {{"queue", queue}}}};
}

// The id of the job of `type` in `queue` (the test's only one of that type).
std::string job_of_type(const RedisServer& redis, const std::string& queue, const std::string& type) {
  for (const auto& key : redis_lines(redis, {"--scan", "--pattern", "ojs:{" + queue + "}:job:*"}))
    if (redis_lines(redis, {"HGET", key, "type"}) == std::vector<std::string>{type}) return redis_lines(redis, {"HGET", key, "id"}).at(0);
  return {};
}

}  // namespace

TEST(TransitionKeys, APlainJobsClaimAndAckSendNoWorkflowKeys) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  api.push({{"type", "keys.plain"}, {"args", json::array()}, {"options", {{"queue", "keys-plain"}}}});
  log_every_command(redis);
  const auto jobs = api.fetch({"keys-plain"}, "w1");
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", jobs[0]["id"]}, {"worker_id", "w1"}}).status, 200);
  EXPECT_EQ(fcall_key_counts(redis, "claim"), std::vector<int>{18}) << "claim.lua's KEYS 1-18, no workflow keys";
  EXPECT_EQ(fcall_key_counts(redis, "ack"), std::vector<int>{8}) << "ack.lua's KEYS 1-8, no workflow keys";
}

TEST(TransitionKeys, AWorkflowStepAckedOnEitherBrokerAdvancesItsChain) {
  RedisServer redis;
  BrokerProcess claiming{redis.url()};
  BrokerProcess other{redis.url()};
  Api a{claiming.url()};
  Api b{other.url()};
  auto created = a.post("/ojs/v1/workflows", {{"type", "chain"}, {"steps", {step("c.one", "keys-chain"), step("c.two", "keys-chain"),
                                                                           step("c.three", "keys-chain")}}});
  ASSERT_EQ(created.status, 201) << created.body.dump();
  const std::string wf = created.body["workflow"]["id"];
  log_every_command(redis);
  // Claimed on one broker, ACKed on the other: it cannot know the job is a step.
  auto first = a.fetch({"keys-chain"}, "w1");
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(b.post("/ojs/v1/workers/ack", {{"job_id", first[0]["id"]}, {"worker_id", "w1"}, {"result", 1}}).status, 200);
  EXPECT_EQ(fcall_key_counts(redis, "ack"), (std::vector<int>{8, 19})) << "asked for the workflow keys, then sent them";
  // Claimed and ACKed on the same broker: it sends them at once.
  redis_lines(redis, {"SLOWLOG", "RESET"});
  auto second = a.fetch({"keys-chain"}, "w1");
  ASSERT_EQ(second.size(), 1u) << "the chain's second step is available";
  EXPECT_EQ(second[0]["type"], "c.two");
  EXPECT_EQ(a.post("/ojs/v1/workers/ack", {{"job_id", second[0]["id"]}, {"worker_id", "w1"}, {"result", 2}}).status, 200);
  EXPECT_EQ(fcall_key_counts(redis, "ack"), std::vector<int>{19});
  auto third = b.fetch({"keys-chain"}, "w1");
  ASSERT_EQ(third.size(), 1u);
  EXPECT_EQ(third[0]["type"], "c.three");
  EXPECT_EQ(third[0]["parent_results"], json::array({nullptr, 2})) << third[0].dump();
  EXPECT_EQ(a.post("/ojs/v1/workers/ack", {{"job_id", third[0]["id"]}, {"worker_id", "w1"}, {"result", 3}}).status, 200);
  const auto done = a.get("/ojs/v1/workflows/" + wf).body["workflow"];
  EXPECT_EQ(done["state"], "completed") << done.dump();
  EXPECT_EQ(done["steps_completed"], 3);
}

// An expired step is discarded by the claim that meets it and ends its step (the
// maintenance pass, which would discard it too, is off: a long interval still ran
// the first pass at start, which could meet the job on a loaded machine).
TEST(TransitionKeys, AnExpiredWorkflowStepMetByAClaimEndsItsStep) {
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--maintenance-interval-ms", "0"}};
  Api api{broker.url()};
  auto created = api.post("/ojs/v1/workflows", {{"type", "group"}, {"jobs", {step("g.first", "keys-group"), step("g.second", "keys-group")}}});
  ASSERT_EQ(created.status, 201) << created.body.dump();
  const std::string wf = created.body["workflow"]["id"];
  const auto expired = job_of_type(redis, "keys-group", "g.first");
  ASSERT_FALSE(expired.empty());
  redis_lines(redis, {"HSET", "ojs:{keys-group}:job:" + expired, "expires_at", "1"});  // long past, at the head
  log_every_command(redis);
  const auto jobs = api.fetch({"keys-group"}, "w1", 2);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0]["type"], "g.second");
  EXPECT_EQ(fcall_key_counts(redis, "claim"), (std::vector<int>{18, 29})) << "stopped before the step, called again with the keys";
  const auto job = api.get("/ojs/v1/jobs/" + expired).body["job"];
  EXPECT_EQ(job["state"], "discarded") << job.dump();
  const auto group = api.get("/ojs/v1/workflows/" + wf).body["workflow"];
  EXPECT_EQ(group["jobs_failed"], 1) << group.dump();
  EXPECT_EQ(group["state"], "running");
}

// A workflow's step waiting for its retry that has expired when a claim promotes it is
// discarded and ends its step, as when a claim meets it in a ready set: the claim
// without the workflow keys leaves it due and the broker calls again with them. (It
// was discarded and its step left running: the group never finished.)
TEST(TransitionKeys, AnExpiredWorkflowStepPromotedByAClaimEndsItsStep) {
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--maintenance-interval-ms", "0"}};
  Api api{broker.url()};
  auto created = api.post("/ojs/v1/workflows", {{"type", "group"}, {"jobs", {step("p.first", "keys-promote"), step("p.second", "keys-promote")}}});
  ASSERT_EQ(created.status, 201) << created.body.dump();
  const std::string wf = created.body["workflow"]["id"];
  const auto first = api.fetch({"keys-promote"}, "w1", 1);
  ASSERT_EQ(first.size(), 1u);
  const std::string retried = first[0]["id"];
  auto nack = api.post("/ojs/v1/workers/nack", {{"job_id", retried}, {"worker_id", "w1"}, {"error", {{"message", "try again"}}}});
  ASSERT_EQ(nack.status, 200) << nack.body.dump();
  ASSERT_EQ(api.get("/ojs/v1/jobs/" + retried).body["job"]["state"], "retryable");
  // Due now, and past its expiry (as time would make it).
  redis_lines(redis, {"HSET", "ojs:{keys-promote}:job:" + retried, "expires_at", "1"});
  redis_lines(redis, {"ZADD", "ojs:{keys-promote}:delayed", "0", retried});
  log_every_command(redis);
  const auto jobs = api.fetch({"keys-promote"}, "w2", 1);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_NE(jobs[0]["id"], retried);
  EXPECT_EQ(fcall_key_counts(redis, "claim"), (std::vector<int>{18, 29})) << "left it due, called again with the keys";
  const auto job = api.get("/ojs/v1/jobs/" + retried).body["job"];
  EXPECT_EQ(job["state"], "discarded") << job.dump();
  const auto group = api.get("/ojs/v1/workflows/" + wf).body["workflow"];
  EXPECT_EQ(group["jobs_failed"], 1) << group.dump();
}

// ack.lua reads into Lua only the fields it uses (HMGET): the whole job is read once,
// natively, behind the script (JobStore::ack). The background loops are off (not even
// the first pass at start: it reads jobs too).
TEST(TransitionKeys, AnAckReadsTheWholeJobOnceNatively) {
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--maintenance-interval-ms", "0"}};
  Api api{broker.url()};
  api.push({{"type", "keys.read"}, {"args", json::array()}, {"options", {{"queue", "keys-read"}}}});
  const auto jobs = api.fetch({"keys-read"}, "w1");
  ASSERT_EQ(jobs.size(), 1u);
  redis_lines(redis, {"CONFIG", "RESETSTAT"});
  const auto acked = api.post("/ojs/v1/workers/ack", {{"job_id", jobs[0]["id"]}, {"worker_id", "w1"}, {"result", {{"ok", true}}}});
  ASSERT_EQ(acked.status, 200);
  EXPECT_EQ(acked.body["job"]["state"], "completed") << acked.body.dump();
  EXPECT_EQ(acked.body["job"]["result"], json({{"ok", true}}));
  // Commands a script runs count in commandstats as their own.
  std::string hgetall = "none";
  for (const auto& line : redis_lines(redis, {"INFO", "commandstats"}))
    if (line.rfind("cmdstat_hgetall:", 0) == 0) hgetall = line.substr(0, line.find(','));
  EXPECT_EQ(hgetall, "cmdstat_hgetall:calls=1") << "the read-back behind ack.lua only";
}

// A NACK is a lean transition too: fail.lua takes no workflow keys for a plain job,
// reads into Lua only the fields it uses, and the whole job is read once, natively,
// behind the script (JobStore::fail); the reply is that read, the retry's fields in it.
TEST(TransitionKeys, APlainJobsNackSendsNoWorkflowKeysAndReadsTheJobOnceNatively) {
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--maintenance-interval-ms", "0"}};
  Api api{broker.url()};
  api.push({{"type", "keys.nack"}, {"args", json::array()}, {"options", {{"queue", "keys-nack"},
           {"retry", {{"max_attempts", 3}, {"initial_interval", "PT1H"}, {"jitter", false}}}}}});
  const auto jobs = api.fetch({"keys-nack"}, "w1");
  ASSERT_EQ(jobs.size(), 1u);
  log_every_command(redis);
  const auto nacked = api.post("/ojs/v1/workers/nack", {{"job_id", jobs[0]["id"]}, {"worker_id", "w1"},
                                                         {"error", {{"type", "Boom"}, {"message", "try again"}}}});
  ASSERT_EQ(nacked.status, 200) << nacked.body.dump();
  EXPECT_EQ(fcall_key_counts(redis, "fail"), std::vector<int>{15}) << "fail.lua's KEYS 1-15, no workflow keys";
  // Newest first: the job read for the decision, the script, then (listed before it)
  // the read-back.
  const auto key = "ojs:{keys-nack}:job:" + jobs[0]["id"].get<std::string>();
  EXPECT_EQ(script_calls_and_reads(redis, "fail", key), (std::vector<std::string>{"HGETALL", "fail", "HGETALL"})) << "read back natively behind the script";
  const auto job = api.get("/ojs/v1/jobs/" + jobs[0]["id"].get<std::string>()).body["job"];
  EXPECT_EQ(job["state"], "retryable") << job.dump();
  EXPECT_EQ(job["attempt"], 1) << job.dump();
  EXPECT_EQ(job["error"]["message"], "try again") << job.dump();
}

// A workflow's step NACKed to its end fails its step. The broker that claimed it
// sends the workflow keys at once; one that did not learns from its read of the job.
TEST(TransitionKeys, AWorkflowStepNackedToItsEndFailsItsStep) {
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--maintenance-interval-ms", "0"}};
  Api api{broker.url()};
  json once = step("n.one", "keys-nack-wf");
  once["options"]["retry"] = {{"max_attempts", 1}, {"on_exhaustion", "discard"}};
  auto created = api.post("/ojs/v1/workflows", {{"type", "group"}, {"jobs", {once, step("n.two", "keys-nack-wf")}}});
  ASSERT_EQ(created.status, 201) << created.body.dump();
  const std::string wf = created.body["workflow"]["id"];
  std::string failed;
  for (const auto& job : api.fetch({"keys-nack-wf"}, "w1", 2))
    if (job["type"] == "n.one") failed = job["id"];
  ASSERT_FALSE(failed.empty());
  log_every_command(redis);
  const auto nacked = api.post("/ojs/v1/workers/nack", {{"job_id", failed}, {"worker_id", "w1"}, {"error", {{"message", "no"}}}});
  ASSERT_EQ(nacked.status, 200) << nacked.body.dump();
  EXPECT_EQ(fcall_key_counts(redis, "fail"), std::vector<int>{26}) << "fail.lua's KEYS 1-15 and the 11 workflow keys";
  EXPECT_EQ(api.get("/ojs/v1/jobs/" + failed).body["job"]["state"], "discarded");
  const auto group = api.get("/ojs/v1/workflows/" + wf).body["workflow"];
  EXPECT_EQ(group["jobs_failed"], 1) << group.dump();
}

// The claim promotes due scheduled jobs and retries only when the snapshot it was
// decided on saw one due (a promotion that finds nothing cost the call ~12k
// instructions): a FETCH with nothing due runs one range read of the delayed set, the
// snapshot's, and one with a retry due makes it available and takes it.
TEST(TransitionKeys, AClaimPromotesOnlyWhenItsSnapshotSawAJobDue) {
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--maintenance-interval-ms", "0"}};
  Api api{broker.url()};
  const json retry = {{"max_attempts", 3}, {"initial_interval", "PT1H"}, {"jitter", false}};
  api.push({{"type", "keys.due"}, {"args", json::array({1})}, {"options", {{"queue", "keys-due"}, {"retry", retry}}}});
  api.push({{"type", "keys.due"}, {"args", json::array({2})}, {"options", {{"queue", "keys-due"}, {"retry", retry}}}});
  const auto first = api.fetch({"keys-due"}, "w1", 1);
  ASSERT_EQ(first.size(), 1u);
  const std::string retried = first[0]["id"];
  ASSERT_EQ(api.post("/ojs/v1/workers/nack", {{"job_id", retried}, {"worker_id", "w1"}, {"error", {{"message", "again"}}}}).status, 200);

  redis_lines(redis, {"CONFIG", "RESETSTAT"});
  const auto second = api.fetch({"keys-due"}, "w1", 1);  // the retry is an hour away: nothing due
  ASSERT_EQ(second.size(), 1u);
  EXPECT_NE(second[0]["id"], retried);
  std::string ranges = "none";
  for (const auto& line : redis_lines(redis, {"INFO", "commandstats"}))
    if (line.rfind("cmdstat_zrangebyscore:", 0) == 0) ranges = line.substr(0, line.find(','));
  EXPECT_EQ(ranges, "cmdstat_zrangebyscore:calls=1") << "the snapshot's read of the delayed set only";

  redis_lines(redis, {"ZADD", "ojs:{keys-due}:delayed", "0", retried});  // due now, as time would make it
  const auto third = api.fetch({"keys-due"}, "w1", 1);
  ASSERT_EQ(third.size(), 1u) << "the claim made the due retry available and took it";
  EXPECT_EQ(third[0]["id"], retried);
}

// A CANCEL is lean too (one a job in a bulk cancel): cancel.lua takes no workflow keys
// for a plain job, reads into Lua only the fields it tests, and the job is read back
// once, natively, behind the script (JobStore::cancel); the reply is that read.
TEST(TransitionKeys, APlainJobsCancelSendsNoWorkflowKeysAndReadsTheJobOnceNatively) {
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--maintenance-interval-ms", "0"}};
  Api api{broker.url()};
  const std::string id = api.push({{"type", "keys.cancel"}, {"args", json::array()}, {"options", {{"queue", "keys-cancel"}}}});
  log_every_command(redis);
  const auto cancelled = api.call("DELETE", "/ojs/v1/jobs/" + id);
  ASSERT_EQ(cancelled.status, 200) << cancelled.body.dump();
  EXPECT_EQ(cancelled.body["job"]["state"], "cancelled") << cancelled.body.dump();
  EXPECT_TRUE(cancelled.body["job"].contains("cancelled_at")) << cancelled.body.dump();
  EXPECT_EQ(fcall_key_counts(redis, "cancel"), std::vector<int>{13}) << "cancel.lua's KEYS 1-13, no workflow keys";
  EXPECT_EQ(script_calls_and_reads(redis, "cancel", "ojs:{keys-cancel}:job:" + id), (std::vector<std::string>{"HGETALL", "cancel"})) << "read back natively behind the script";
  EXPECT_TRUE(api.fetch({"keys-cancel"}, "w1").empty());
  EXPECT_EQ(api.call("DELETE", "/ojs/v1/jobs/" + id).status, 409) << "cancelled already";
}

// The cancel of a workflow's step, sent without the workflow keys (the broker does not
// know the job is one), is answered need_keys with nothing written, and sent again
// with them: the step ends and the chain with it.
TEST(TransitionKeys, AWorkflowStepCancelledEndsItsChain) {
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--maintenance-interval-ms", "0"}};
  Api api{broker.url()};
  auto created = api.post("/ojs/v1/workflows", {{"type", "chain"}, {"steps", {step("c.one", "keys-cancel-wf"), step("c.two", "keys-cancel-wf")}}});
  ASSERT_EQ(created.status, 201) << created.body.dump();
  const std::string wf = created.body["workflow"]["id"];
  const std::string first = created.body["workflow"]["steps"][0]["job_id"];
  log_every_command(redis);
  const auto cancelled = api.call("DELETE", "/ojs/v1/jobs/" + first);
  ASSERT_EQ(cancelled.status, 200) << cancelled.body.dump();
  EXPECT_EQ(cancelled.body["job"]["state"], "cancelled");
  EXPECT_EQ(fcall_key_counts(redis, "cancel"), (std::vector<int>{13, 24})) << "asked for the 11 workflow keys, then sent them";
  const auto chain = api.get("/ojs/v1/workflows/" + wf).body["workflow"];
  EXPECT_EQ(chain["state"], "cancelled") << chain.dump();
  EXPECT_EQ(chain["steps"][0]["state"], "cancelled") << chain.dump();
  EXPECT_TRUE(api.fetch({"keys-cancel-wf"}, "w1").empty()) << "the second step never runs";
}
