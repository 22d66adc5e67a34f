// The scripts as one Redis Function library (broker/store/lua_scripts.hpp): loaded
// once, it outlives every call, so no state may leak from one call to the next; a
// Redis that lost it (FUNCTION FLUSH, a restart) gets it again on demand; brokers
// built or configured differently share one Redis, each calling its own library.
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

// The names of the broker libraries loaded in Redis (ojs_<hash12>).
std::set<std::string> ojs_libraries(const RedisServer& redis) {
  std::set<std::string> out;
  static const std::regex name("ojs_[0-9a-f]{12}");
  for (const auto& line : redis_lines(redis, {"FUNCTION", "LIST"}))
    if (std::regex_match(line, name)) out.insert(line);
  return out;
}

json gpu_job(const std::string& queue, int gpus, const std::string& tenant = "") {
  json j = ml_job(queue, {{"ext_ml_gpu_count", gpus}});
  if (!tenant.empty()) j["meta"] = {{"tenant_id", tenant}};
  return j;
}

const json kGpuWorker = {{"capabilities", {{"accelerator", "gpu"}, {"gpu", {{"type", "nvidia-a100"}, {"count", 8}, {"memory_gb", 80}}}}}};

void put_config(Api& api, const std::string& queue, const json& body) {
  const auto r = api.call("PUT", "/ojs/v1/admin/queues/" + queue + "/config", body);
  ASSERT_EQ(r.status, 200) << r.body.dump();
}

std::string fetch_one(Api& api, const std::string& queue, const std::string& worker) {
  const auto jobs = api.fetch({queue}, worker, 1, kGpuWorker);
  return jobs.empty() ? "" : jobs[0]["id"].get<std::string>();
}

}  // namespace

// A claim reads the queue budget once for all its classes (per_call in _lib.lua).
// Each claim must see the budget as it is now: after an ACK gave GPUs back, after
// the limit was raised, and not at all in a queue without one.
TEST(RedisFunctions, EachClaimReadsTheBudgetAfresh) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  put_config(api, "fn-budget", {{"budgets", {{"max_total_gpus", 2}}}});
  const auto a1 = api.push(gpu_job("fn-budget", 2));
  const auto a2 = api.push(gpu_job("fn-budget", 2));
  const auto a3 = api.push(gpu_job("fn-budget", 2));
  const auto free1 = api.push(gpu_job("fn-free", 2));

  EXPECT_EQ(fetch_one(api, "fn-budget", "w1"), a1);
  EXPECT_EQ(fetch_one(api, "fn-budget", "w2"), "") << "the budget (2 GPUs) is in use";
  EXPECT_EQ(fetch_one(api, "fn-free", "w3"), free1) << "a queue without a budget was held to another queue's";

  ASSERT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", a1}, {"worker_id", "w1"}}).status, 200);
  EXPECT_EQ(fetch_one(api, "fn-budget", "w2"), a2) << "the GPUs the ACK gave back were not seen";

  put_config(api, "fn-budget", {{"budgets", {{"max_total_gpus", 4}}}});
  EXPECT_EQ(fetch_one(api, "fn-budget", "w4"), a3) << "the raised budget was not seen";
}

// Whether a queue has tenant quotas is read once per claim: quotas configured
// after a claim found none must hold for the next claim.
TEST(RedisFunctions, TenantQuotasSetAfterAClaimHoldForTheNext) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  const auto t1 = api.push(gpu_job("fn-tenant", 2, "team-a"));
  EXPECT_EQ(fetch_one(api, "fn-tenant", "w1"), t1);  // no quotas yet

  put_config(api, "fn-tenant", {{"tenant_quotas", {{"tenants", {{"team-a", {{"max_gpus", 2}}}}}}}});
  const auto t2 = api.push(gpu_job("fn-tenant", 2, "team-a"));
  const auto b1 = api.push(gpu_job("fn-tenant", 2, "team-b"));
  EXPECT_EQ(fetch_one(api, "fn-tenant", "w2"), b1) << "team-a is at its quota (2/2 GPUs); its job must wait";
  EXPECT_EQ(api.get("/ojs/v1/jobs/" + t2).body["job"]["state"], "available");
}

// FUNCTION FLUSH while the broker runs (as a restarted Redis without persistence,
// or a new cluster master): every kind of call loads the library again and succeeds.
TEST(RedisFunctions, FlushedLibraryIsLoadedAgainOnDemand) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  const auto flush = [&] { ASSERT_EQ(redis_lines(redis, {"FUNCTION", "FLUSH"}), std::vector<std::string>{"OK"}); };
  api.push(job_in("fn-flush"));  // the broker has loaded its library
  ASSERT_EQ(ojs_libraries(redis).size(), 1u);

  flush();
  const auto id = api.push(job_in("fn-flush"));
  flush();
  auto jobs = api.fetch({"fn-flush"}, "w", 2);
  ASSERT_EQ(jobs.size(), 2u);
  flush();
  for (const auto& j : jobs) {
    // The ACK's reply is the job read behind the script (JobStore::ack): after the
    // library was loaded again, that read must follow the second call, not the first.
    const auto r = api.post("/ojs/v1/workers/ack", {{"job_id", j["id"]}, {"worker_id", "w"}});
    ASSERT_EQ(r.status, 200) << r.body.dump();
    EXPECT_EQ(r.body["job"]["state"], "completed") << r.body.dump();
    EXPECT_TRUE(r.body["job"].contains("completed_at")) << r.body.dump();
  }
  EXPECT_EQ(api.get("/ojs/v1/jobs/" + id).body["job"]["state"], "completed");
  EXPECT_EQ(ojs_libraries(redis).size(), 1u);
}

// Library and function names carry a hash of the library text: a broker with
// another event bound (another text) loads a library of its own beside the first,
// and each keeps calling its own (its bound is the one applied to its queues).
TEST(RedisFunctions, BrokersWithDifferentEventBoundsShareOneRedis) {
  RedisServer redis;
  BrokerProcess wide{redis.url()};  // --events-max-len 10000
  BrokerProcess narrow{redis.url(), {"--events-max-len", "100"}};
  Api a{wide.url()}, b{narrow.url()};
  json batch = {{"jobs", json::array()}};
  for (int i = 0; i < 100; ++i) batch["jobs"].push_back(job_in("fn-wide"));
  ASSERT_EQ(a.post("/ojs/v1/jobs/batch", batch).status, 201);
  for (auto& j : batch["jobs"]) j["options"]["queue"] = "fn-narrow";
  for (int round = 0; round < 4; ++round) {  // interleaved: neither replaces the other's code
    ASSERT_EQ(b.post("/ojs/v1/jobs/batch", batch).status, 201);
    for (auto& j : batch["jobs"]) j["options"]["queue"] = "fn-wide";
    ASSERT_EQ(a.post("/ojs/v1/jobs/batch", batch).status, 201);
    for (auto& j : batch["jobs"]) j["options"]["queue"] = "fn-narrow";
  }
  EXPECT_EQ(ojs_libraries(redis).size(), 2u);
  const auto xlen = [&](const std::string& queue) {
    return std::stoi(redis_lines(redis, {"XLEN", "ojs:{" + queue + "}:events"}).at(0));
  };
  EXPECT_GE(xlen("fn-wide"), 500) << "500 jobs enqueued under a bound of 10000";
  EXPECT_LT(xlen("fn-narrow"), 300) << "400 events, capped at about 100";

  // Both serve the whole job cycle, on each other's jobs too.
  for (auto* api : {&a, &b}) {
    for (const auto& queue : {"fn-wide", "fn-narrow"}) {
      const auto jobs = api->fetch({queue}, "w", 1);
      ASSERT_EQ(jobs.size(), 1u) << queue;
      EXPECT_EQ(api->post("/ojs/v1/workers/ack", {{"job_id", jobs[0]["id"]}, {"worker_id", "w"}}).status, 200);
    }
  }
}
