// Holding a job keeps the books: a gang forming on its workers (their GPUs charged to
// it) is refused, so the budget ledger stays what the active jobs hold, and a held job
// replaced by a unique PUSH leaves the queue's held index with its cancellation.
// Real redis-server and broker; workers simulated by HTTP calls.
#include <gtest/gtest.h>

#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

class HoldBudget : public ::testing::Test {
 protected:
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};

  long long gpus_charged(const std::string& queue) {
    return api.get("/ojs/v1/admin/queues/" + queue + "/budget").body["budget"]["in_use"]["gpus"].get<long long>();
  }
  json host(const std::string& rack) {
    json caps = example_worker("4xa100-pcie");
    caps["labels"]["rack"] = rack;
    return {{"capabilities", caps}};
  }
};

TEST_F(HoldBudget, AFormingGangIsNotHeld) {
  const auto id = api.push(ml_job("hold-gang", {{"ext_ml_gpu_count", 4}, {"ext_ml_gang", {{"size", 2}, {"timeout_seconds", 60}}}}));
  // One member joins: its GPUs are charged to the forming gang.
  EXPECT_EQ(api.fetch({"hold-gang"}, "w1", 1, host("r1")).size(), 0u);
  ASSERT_EQ(gpus_charged("hold-gang"), 4);

  const auto held = api.post("/ojs/v1/jobs/" + id + "/hold", json::object());
  EXPECT_EQ(held.status, 409) << held.body.dump();
  EXPECT_EQ(held.body["error"]["details"]["reason"], "gang_forming") << held.body.dump();
  const auto job = api.get("/ojs/v1/jobs/" + id).body["job"];
  EXPECT_EQ(job["state"], "available");

  // The ledger is what the books say: nothing active, the forming gang's GPUs charged.
  const auto rec = api.get("/ojs/v1/admin/queues/hold-gang/reconcile");
  ASSERT_EQ(rec.status, 200) << rec.body.dump();
  // The second member completes the gang: it starts, charged once.
  ASSERT_EQ(api.fetch({"hold-gang"}, "w2", 1, host("r2")).size(), 1u);
  EXPECT_EQ(gpus_charged("hold-gang"), 8);
  const auto after = api.get("/ojs/v1/admin/queues/hold-gang/reconcile");
  EXPECT_EQ(after.body["reconciliation"]["consistent"], true) << after.body.dump();
}

TEST_F(HoldBudget, AUniqueReplaceOfAHeldJobLeavesTheHeldIndex) {
  const json job = {{"type", "report.daily"}, {"args", json::array({1})},
                    {"options", {{"queue", "hold-uq"}, {"unique", {{"keys", {"type", "queue"}}, {"on_conflict", "replace"}}}}}};
  const auto first = api.push(job);
  ASSERT_EQ(api.post("/ojs/v1/jobs/" + first + "/hold", json::object()).status, 200);
  const auto second = api.post("/ojs/v1/jobs", job);
  ASSERT_EQ(second.status, 201) << second.body.dump();
  EXPECT_EQ(api.get("/ojs/v1/jobs/" + first).body["job"]["state"], "cancelled");

  const auto stats = api.get("/ojs/v1/queues/hold-uq/stats");
  EXPECT_EQ(stats.body["stats"]["pending"], 0) << stats.body.dump();
  const auto listed = api.get("/ojs/v1/admin/queues/hold-uq/jobs?state=pending");
  EXPECT_EQ(listed.body["count"], 0) << listed.body.dump();
  EXPECT_TRUE(redis_lines(redis, {"ZRANGE", "ojs:{hold-uq}:on-hold", "0", "-1"}).empty());

  // With the new job done the queue empties and can go.
  const auto got = api.fetch({"hold-uq"}, "w1");
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", got[0]["id"]}, {"worker_id", "w1"}}).status, 200);
  const auto deleted = api.call("DELETE", "/ojs/v1/admin/queues/hold-uq");
  EXPECT_EQ(deleted.status, 200) << deleted.body.dump();
}
