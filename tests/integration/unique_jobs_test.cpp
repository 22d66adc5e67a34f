// Unique jobs (spec/ojs-unique-jobs.md): key dimensions, states, period and the
// four conflict policies, decided atomically by push_unique.lua.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {
json unique_job(const std::string& queue, json args, json policy) {
  return {{"type", "report.daily"}, {"args", std::move(args)}, {"options", {{"queue", queue}, {"unique", std::move(policy)}}}};
}
}  // namespace

class UniqueJobs : public ::testing::Test {
 protected:
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
};

TEST_F(UniqueJobs, RejectAnswers409NamingTheExistingJob) {
  const json policy = {{"keys", {"type", "args"}}, {"args_keys", {"user_id"}}};
  const auto first = api.push(unique_job("uq-a", {{{"user_id", 42}, {"template", "welcome"}}}, policy));
  auto again = api.post("/ojs/v1/jobs", unique_job("uq-a", {{{"user_id", 42}, {"template", "other"}}}, policy));
  ASSERT_EQ(again.status, 409) << again.body.dump();
  EXPECT_EQ(again.body["error"]["code"], "duplicate");
  EXPECT_EQ(again.body["error"]["details"]["existing_job_id"], first);
  EXPECT_EQ(again.body["error"]["details"]["existing_job_state"], "available");
  EXPECT_EQ(again.body["error"]["details"]["uniqueness_key"].get<std::string>().size(), 64u);
  // Another user is other work.
  EXPECT_EQ(api.post("/ojs/v1/jobs", unique_job("uq-a", {{{"user_id", 7}}}, policy)).status, 201);
  // Once the holder completes (not in the default states) the key is free again.
  ASSERT_EQ(api.fetch({"uq-a"}, "w").size(), 1u);
  ASSERT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", first}}).status, 200);
  EXPECT_EQ(api.post("/ojs/v1/jobs", unique_job("uq-a", {{{"user_id", 42}}}, policy)).status, 201);
}

TEST_F(UniqueJobs, IgnoreAnswers200WithTheExistingJob) {
  const json policy = {{"on_conflict", "ignore"}};  // keys default to ["type"]
  const auto first = api.push(unique_job("uq-b", {1}, policy));
  auto again = api.post("/ojs/v1/jobs", unique_job("uq-b", {2}, policy));
  ASSERT_EQ(again.status, 200) << again.body.dump();
  EXPECT_EQ(again.body["deduplicated"], true);
  EXPECT_EQ(again.body["job"]["id"], first);
  EXPECT_EQ(again.body["job"]["state"], "available");
  ASSERT_EQ(api.fetch({"uq-b"}, "w").size(), 1u);
  EXPECT_TRUE(api.fetch({"uq-b"}, "w").empty());
}

TEST_F(UniqueJobs, ReplaceCancelsAWaitingHolderButNeverAnActiveOne) {
  const json policy = {{"keys", {"type", "queue"}}, {"on_conflict", "replace"}};
  const auto first = api.push(unique_job("uq-c", {1}, policy));
  auto second = api.post("/ojs/v1/jobs", unique_job("uq-c", {2}, policy));
  ASSERT_EQ(second.status, 201) << second.body.dump();
  auto old = api.get("/ojs/v1/jobs/" + first).body["job"];
  EXPECT_EQ(old["state"], "cancelled");
  auto fetched = api.fetch({"uq-c"}, "w");
  ASSERT_EQ(fetched.size(), 1u);
  EXPECT_EQ(fetched[0]["id"], second.body["job"]["id"]);
  EXPECT_TRUE(api.fetch({"uq-c"}, "w").empty());
  // The new holder is active now: a replace falls back to reject.
  auto third = api.post("/ojs/v1/jobs", unique_job("uq-c", {3}, policy));
  EXPECT_EQ(third.status, 409);
  EXPECT_EQ(third.body["error"]["details"]["existing_job_state"], "active");
}

TEST_F(UniqueJobs, ReplaceExceptScheduleKeepsTheHoldersTime) {
  const json policy = {{"on_conflict", "replace_except_schedule"}};
  json a = unique_job("uq-d", {1}, policy);
  a["options"]["scheduled_at"] = "2099-01-01T09:00:00Z";
  const auto first = api.push(a);
  json b = unique_job("uq-d", {2}, policy);
  b["options"]["scheduled_at"] = "2099-06-01T09:00:00Z";
  auto second = api.post("/ojs/v1/jobs", b);
  ASSERT_EQ(second.status, 201) << second.body.dump();
  EXPECT_EQ(second.body["job"]["state"], "scheduled");
  EXPECT_EQ(second.body["job"]["scheduled_at"].get<std::string>().substr(0, 10), "2099-01-01");
  EXPECT_EQ(second.body["job"]["args"], json::array({2}));
  EXPECT_EQ(api.get("/ojs/v1/jobs/" + first).body["job"]["state"], "cancelled");
}

TEST_F(UniqueJobs, PeriodEndsTheConstraintEvenForACompletedHolder) {
  const json policy = {{"period", "PT3S"}, {"states", {"available", "active", "completed"}}};
  const auto first = api.push(unique_job("uq-e", {1}, policy));
  api.fetch({"uq-e"}, "w");
  api.post("/ojs/v1/workers/ack", {{"job_id", first}});
  EXPECT_EQ(api.post("/ojs/v1/jobs", unique_job("uq-e", {1}, policy)).status, 409);  // completed is a listed state
  json created;
  for (int i = 0; i < 150 && created.is_null(); ++i) {  // the period runs from the holder's created_at
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto r = api.post("/ojs/v1/jobs", unique_job("uq-e", {1}, policy));
    if (r.status == 201) created = r.body;
  }
  EXPECT_FALSE(created.is_null());
}

TEST_F(UniqueJobs, InvalidPoliciesAreRefusedNamingTheField) {
  auto field = [&](json policy) {
    return api.post("/ojs/v1/jobs", unique_job("uq-f", {{{"user_id", 1}}}, std::move(policy))).body["error"]["details"]["field"];
  };
  EXPECT_EQ(field({{"keys", {"argz"}}}), "unique.keys");
  EXPECT_EQ(field({{"keys", {"meta"}}}), "unique.meta_keys");
  EXPECT_EQ(field({{"keys", {"args"}}, {"args_keys", {"missing"}}}), "unique.args_keys");
  EXPECT_EQ(field({{"period", "soon"}}), "unique.period");
  EXPECT_EQ(field({{"on_conflict", "merge"}}), "unique.on_conflict");
  EXPECT_EQ(field({{"states", {"running"}}}), "unique.states");
}

TEST_F(UniqueJobs, ConcurrentDuplicatesCreateExactlyOneJob) {
  const json policy = {{"keys", {"type", "args"}}};
  std::atomic<int> created{0}, rejected{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      Api own(broker.url());
      for (int i = 0; i < 5; ++i) {
        const auto status = own.post("/ojs/v1/jobs", unique_job("uq-g", {{{"n", i}}}, policy)).status;
        (status == 201 ? created : rejected)++;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(created.load(), 5);  // one per distinct args
  EXPECT_EQ(rejected.load(), 35);
}
