// What an ACK changes besides the job (the completed count and its minute, the
// finished index, the type's run times) leaves the transition: the ACK journals a
// completion line beside its usage line, and settle.lua writes what it stands for,
// before any read of it and in the maintenance pass, taking the lines off the
// journal in the same call. These tests hold the promises that makes: a reader sees
// every end that answered, each end counts once whoever settles and whenever a
// broker dies, and a Redis written the old way keeps its counts.
#include <gtest/gtest.h>

#include <csignal>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

long long number(const RedisServer& redis, const std::vector<std::string>& argv) {
  const auto v = redis_value(redis, argv);
  return v.empty() ? 0 : std::stoll(v);
}

json plain_job(const std::string& queue) { return {{"type", "settle.task"}, {"queue", queue}, {"args", json::array({1})}}; }

// Fetches one job of `queue` as `worker` and ACKs it (or NACKs it for good); its id.
std::string run_one(Api& api, const std::string& queue, const std::string& worker, bool fail = false) {
  const auto jobs = api.fetch({queue}, worker, 1);
  EXPECT_EQ(jobs.size(), 1u);
  if (jobs.empty()) return "";
  const std::string id = jobs[0]["id"];
  const auto reply = fail ? api.post("/ojs/v1/workers/nack", {{"job_id", id}, {"worker_id", worker},
                                                               {"error", {{"message", "no"}, {"retryable", false}}}})
                          : api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", worker}});
  EXPECT_EQ(reply.status, 200) << reply.body.dump();
  return id;
}

long long completed_count(Api& api, const std::string& queue) {
  const auto stats = api.get("/ojs/v1/queues/" + queue + "/stats");
  EXPECT_EQ(stats.status, 200) << stats.body.dump();
  return stats.body["queue"]["completed"].get<long long>();
}

// The queue's CPU-microseconds: the totals' (all tenants) and the sum of its jobs' own records.
std::pair<long long, long long> cpu_totals_and_records(const RedisServer& redis, const std::string& queue,
                                                       const std::vector<std::string>& ids) {
  long long records = 0;
  for (const auto& id : ids) records += number(redis, {"HGET", "ojs:{" + queue + "}:job:" + id, "usage_cpu_us"});
  return {number(redis, {"HGET", "ojs:{" + queue + "}:usage-totals", "\tcpu"}), records};
}

}  // namespace

// With no maintenance pass at all, the counts read right after the ACKs hold
// every one of them (the admin listing, the stats history), a second read counts
// none twice, and the journal is empty after.
TEST(Settle, AReadSeesEveryEndThatAnsweredAndCountsItOnce) {
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--maintenance-interval-ms", "0"}};
  Api api{broker.url()};
  const std::string q = "settle-read";
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) api.push(plain_job(q));
  for (int i = 0; i < 3; ++i) ids.push_back(run_one(api, q, "w"));
  EXPECT_EQ(redis_value(redis, {"HGET", "ojs:{" + q + "}:stats", "completed"}), "") << "the ACK itself writes no count";
  EXPECT_EQ(completed_count(api, q), 3);
  EXPECT_EQ(completed_count(api, q), 3);
  EXPECT_EQ(number(redis, {"ZCARD", "ojs:{" + q + "}:finished:completed"}), 3);
  EXPECT_EQ(number(redis, {"LLEN", "ojs:{" + q + "}:run-times:settle.task"}), 3);
  const auto [totals, records] = cpu_totals_and_records(redis, q, ids);
  EXPECT_GT(records, 0);
  EXPECT_EQ(totals, records);

  const auto listing = api.get("/ojs/v1/admin/jobs?state=completed&queue=" + q);
  ASSERT_EQ(listing.status, 200) << listing.body.dump();
  EXPECT_EQ(listing.body["items"].size(), 3u) << listing.body.dump();
  const auto history = api.get("/ojs/v1/admin/stats/history?period=1m&queue=" + q);
  ASSERT_EQ(history.status, 200) << history.body.dump();
  long long processed = 0;
  for (const auto& point : history.body["data"]) processed += point["processed"].get<long long>();
  EXPECT_EQ(processed, 3) << history.body.dump();
  EXPECT_EQ(number(redis, {"LLEN", "ojs:{" + q + "}:usage-journal"}), 0);
}

// A NACK's counts leave the transition too: a retried attempt's failed minute, a
// discarded job's count, its minute and its finished index are settled from its end
// line, and a read right after the NACK sees them.
TEST(Settle, ANacksFailedMinuteAndDiscardAreSettledBeforeAnyRead) {
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--maintenance-interval-ms", "0"}};
  Api api{broker.url()};
  const std::string q = "settle-nack";
  json retried = plain_job(q);
  retried["retry"] = {{"max_attempts", 3}, {"initial_interval", "PT1H"}, {"jitter", false}};
  api.push(retried);
  const auto first = api.fetch({q}, "w", 1);
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(api.post("/ojs/v1/workers/nack", {{"job_id", first[0]["id"]}, {"worker_id", "w"}, {"error", {{"message", "again"}}}}).status,
            200);
  api.push(plain_job(q));
  const std::string discarded = run_one(api, q, "w", true);
  EXPECT_EQ(redis_value(redis, {"HGET", "ojs:{" + q + "}:stats", "discarded"}), "") << "the NACK itself writes no count";
  EXPECT_EQ(number(redis, {"ZCARD", "ojs:{" + q + "}:finished:discarded"}), 0) << "nor the finished index";

  const auto listing = api.get("/ojs/v1/admin/jobs?state=discarded&queue=" + q);
  ASSERT_EQ(listing.status, 200) << listing.body.dump();
  ASSERT_EQ(listing.body["items"].size(), 1u) << listing.body.dump();
  EXPECT_EQ(listing.body["items"][0]["id"], discarded);
  const auto stats = api.get("/ojs/v1/queues/" + q + "/stats");
  ASSERT_EQ(stats.status, 200) << stats.body.dump();
  EXPECT_EQ(number(redis, {"HGET", "ojs:{" + q + "}:stats", "discarded"}), 1);
  const auto history = api.get("/ojs/v1/admin/stats/history?period=1m&queue=" + q);
  ASSERT_EQ(history.status, 200) << history.body.dump();
  long long failed = 0;
  for (const auto& point : history.body["data"]) failed += point["failed"].get<long long>();
  EXPECT_EQ(failed, 2) << "the retried attempt and the discarded one: " << history.body.dump();
  EXPECT_EQ(number(redis, {"LLEN", "ojs:{" + q + "}:usage-journal"}), 0);
}

// A discard's index entry is settled only while the job is still that discard:
// retried by an admin before any read, it leaves none; discarded, retried and
// discarded again before a read, it is listed once, at its last discard. Its count
// keeps every discard.
TEST(Settle, ADiscardRetriedBeforeItIsSettledIsIndexedOnlyAsItStands) {
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--maintenance-interval-ms", "0"}};
  Api api{broker.url()};
  const std::string q = "settle-redo";
  api.push(plain_job(q));
  const std::string id = run_one(api, q, "w", true);
  ASSERT_EQ(api.post("/ojs/v1/admin/jobs/" + id + "/retry", json::object()).status, 200);
  EXPECT_EQ(api.get("/ojs/v1/admin/jobs?queue=" + q + "&state=discarded").body["items"].size(), 0u) << "retried: not discarded";
  EXPECT_EQ(number(redis, {"ZCARD", "ojs:{" + q + "}:finished:discarded"}), 0);

  ASSERT_EQ(api.post("/ojs/v1/admin/jobs/" + id + "/retry", json::object()).status, 409) << "available now";
  EXPECT_EQ(run_one(api, q, "w", true), id);
  ASSERT_EQ(api.post("/ojs/v1/admin/jobs/" + id + "/retry", json::object()).status, 200);
  EXPECT_EQ(run_one(api, q, "w", true), id);  // discarded again, twice unsettled
  const auto listed = api.get("/ojs/v1/admin/jobs?queue=" + q + "&state=discarded").body["items"];
  ASSERT_EQ(listed.size(), 1u) << listed.dump();
  const auto at = redis_value(redis, {"HGET", "ojs:{" + q + "}:job:" + id, "discarded_at"});
  EXPECT_EQ(redis_value(redis, {"ZSCORE", "ojs:{" + q + "}:finished:discarded", id}), at) << "indexed at its last discard";
  EXPECT_EQ(number(redis, {"HGET", "ojs:{" + q + "}:stats", "discarded"}), 3);
}

// Brokers die with SIGKILL while others keep finishing jobs and settling: every
// end is counted once, the finished index holds each completed job once, and the
// usage totals equal the sum of the jobs' own records, exactly.
TEST(Settle, BrokersKilledAtAnyInstantNeitherLoseNorDoubleAnEnd) {
  RedisServer redis;
  BrokerProcess server{redis.url(), {"--maintenance-interval-ms", "0"}};
  Api api{server.url()};
  const std::string q = "settle-kill";
  std::vector<std::string> ids;
  long long acked = 0;
  for (int round = 0; round < 4; ++round) {
    auto settler = std::make_unique<BrokerProcess>(redis.url(), std::vector<std::string>{"--maintenance-interval-ms", "5"});
    for (int i = 0; i < 15; ++i) api.push(plain_job(q));
    for (int i = 0; i < 15; ++i) {
      const bool fail = i % 5 == 4;
      ids.push_back(run_one(api, q, "w" + std::to_string(round), fail));
      if (!fail) ++acked;
      if (i == 7 + round) settler->kill9();  // mid-round, while it settles every 5 ms
    }
    settler.reset();
  }
  EXPECT_EQ(completed_count(api, q), acked);
  EXPECT_EQ(number(redis, {"ZCARD", "ojs:{" + q + "}:finished:completed"}), acked);
  const auto failed = static_cast<long long>(ids.size()) - acked;
  EXPECT_EQ(number(redis, {"HGET", "ojs:{" + q + "}:stats", "discarded"}), failed);
  EXPECT_EQ(number(redis, {"ZCARD", "ojs:{" + q + "}:finished:discarded"}), failed);
  const auto [totals, records] = cpu_totals_and_records(redis, q, ids);
  EXPECT_GT(records, 0);
  EXPECT_EQ(totals, records) << "a usage line lost or folded twice";
  EXPECT_EQ(number(redis, {"LLEN", "ojs:{" + q + "}:usage-journal"}), 0);
}

// --events off writes no event, and the ends are settled all the same.
TEST(Settle, WithEventsOffEndsAreStillSettled) {
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--maintenance-interval-ms", "0", "--events", "off"}};
  Api api{broker.url()};
  const std::string q = "settle-off";
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) api.push(plain_job(q));
  for (int i = 0; i < 4; ++i) ids.push_back(run_one(api, q, "w", i == 3));
  EXPECT_EQ(completed_count(api, q), 3);
  EXPECT_EQ(number(redis, {"XLEN", "ojs:{" + q + "}:events"}), 0);
  const auto [totals, records] = cpu_totals_and_records(redis, q, ids);
  EXPECT_EQ(totals, records);
}

// A Redis written by a broker that counted each ACK inside it: its counts stay as
// they are, and the usage lines left in its journal are folded with the new ones.
TEST(Settle, CountsAndJournalWrittenTheOldWayAreKept) {
  RedisServer redis;
  const std::string q = "settle-old";
  redis_lines(redis, {"HSET", "ojs:{" + q + "}:stats", "completed", "5"});
  // end ms, duration us, held, gpu, cpu, memory, gpu memory, tenant, type, worker
  redis_lines(redis, {"RPUSH", "ojs:{" + q + "}:usage-journal", "1700000000000\t2000\t0\t0\t1\t0\t0\t\tsettle.task\tw-old"});
  BrokerProcess broker{redis.url(), {"--maintenance-interval-ms", "0"}};
  Api api{broker.url()};
  api.push(plain_job(q));
  const auto id = run_one(api, q, "w");
  EXPECT_EQ(completed_count(api, q), 6);
  EXPECT_EQ(number(redis, {"LLEN", "ojs:{" + q + "}:usage-journal"}), 0);
  const auto [totals, records] = cpu_totals_and_records(redis, q, {id});
  EXPECT_EQ(totals, records + 2000);
}
