// Batch PUSH (POST /ojs/v1/jobs/batch): all jobs or none, one script; the router
// does not read `batch` as a job id.
#include <gtest/gtest.h>

#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {
json job(const std::string& type, const std::string& queue) {
  return {{"type", type}, {"args", json::array({1})}, {"options", {{"queue", queue}}}};
}
}  // namespace

class BatchPush : public ::testing::Test {
 protected:
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
};

TEST_F(BatchPush, EnqueuesEveryJobAcrossQueuesInOrder) {
  json scheduled = job("b.later", "batch-b");
  scheduled["scheduled_at"] = "2099-01-01T00:00:00Z";
  auto r = api.post("/ojs/v1/jobs/batch", {{"jobs", {job("b.one", "batch-a"), job("b.two", "batch-a"), scheduled}}});
  ASSERT_EQ(r.status, 201) << r.body.dump();
  EXPECT_EQ(r.body["count"], 3);
  ASSERT_EQ(r.body["jobs"].size(), 3u);
  EXPECT_EQ(r.body["jobs"][0]["state"], "available");
  EXPECT_EQ(r.body["jobs"][2]["state"], "scheduled");
  for (const auto& j : r.body["jobs"]) EXPECT_EQ(api.get("/ojs/v1/jobs/" + j["id"].get<std::string>()).status, 200);
  // FIFO within the queue, as for single PUSHes.
  auto first = api.fetch({"batch-a"}, "w");
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0]["type"], "b.one");
  EXPECT_EQ(api.fetch({"batch-a"}, "w")[0]["type"], "b.two");
  EXPECT_TRUE(api.fetch({"batch-b"}, "w").empty());
  // Events were written for each job.
  auto events = api.get("/ojs/v1/events?queues=batch-a&types=job.enqueued");
  ASSERT_EQ(events.status, 200);
  EXPECT_EQ(events.body["events"].size(), 2u);
}

TEST_F(BatchPush, OneInvalidJobRefusesTheWholeBatchNamingIt) {
  json bad = job("b.bad", "batch-c");
  bad.erase("type");
  auto r = api.post("/ojs/v1/jobs/batch", {{"jobs", {job("b.ok", "batch-c"), bad, job("b.ok2", "batch-c")}}});
  ASSERT_EQ(r.status, 400) << r.body.dump();
  EXPECT_EQ(r.body["error"]["details"]["field"], "jobs[1].type");
  ASSERT_EQ(r.body["error"]["details"]["errors"].size(), 1u);
  EXPECT_EQ(r.body["error"]["details"]["errors"][0]["index"], 1);
  EXPECT_TRUE(api.fetch({"batch-c"}, "w").empty());  // nothing was enqueued
}

TEST_F(BatchPush, AnExistingOrRepeatedIdRefusesTheWholeBatch) {
  const auto existing = api.push(job("b.first", "batch-d"));
  json again = job("b.again", "batch-d");
  again["id"] = existing;
  auto dup = api.post("/ojs/v1/jobs/batch", {{"jobs", {job("b.x", "batch-d"), again}}});
  EXPECT_EQ(dup.status, 409) << dup.body.dump();
  EXPECT_EQ(dup.body["error"]["details"]["job_id"], existing);
  ASSERT_EQ(api.fetch({"batch-d"}, "w").size(), 1u);  // only the single PUSH
  EXPECT_TRUE(api.fetch({"batch-d"}, "w").empty());

  json a = job("b.a", "batch-e"), b = job("b.b", "batch-e");
  a["id"] = b["id"] = "019414d4-8b2e-7c3a-b5d1-f0e2a3b4c5d6";
  auto repeated = api.post("/ojs/v1/jobs/batch", {{"jobs", {a, b}}});
  EXPECT_EQ(repeated.status, 400);
  EXPECT_EQ(repeated.body["error"]["details"]["field"], "jobs[1].id");
  EXPECT_TRUE(api.fetch({"batch-e"}, "w").empty());
}

TEST_F(BatchPush, MalformedBodiesAreRefused) {
  EXPECT_EQ(api.post("/ojs/v1/jobs/batch", json::object()).body["error"]["details"]["field"], "jobs");
  EXPECT_EQ(api.post("/ojs/v1/jobs/batch", {{"jobs", json::array()}}).status, 400);
  EXPECT_EQ(api.post("/ojs/v1/jobs/batch", {{"jobs", "x"}}).status, 400);
}

TEST_F(BatchPush, BatchIsNotAJobId) {
  auto get = api.get("/ojs/v1/jobs/batch");
  EXPECT_NE(get.status, 404) << get.body.dump();  // the route exists, only for POST
  EXPECT_EQ(get.body["error"]["message"].get<std::string>().find("job batch"), std::string::npos);
  // Job ids still route to the job endpoints.
  EXPECT_EQ(api.get("/ojs/v1/jobs/019414d4-8b2e-7c3a-b5d1-f0e2a3b4c5d6").status, 404);
  EXPECT_EQ(api.get("/ojs/manifest").body["capabilities"]["batch_enqueue"], true);
}

// ojs-multi-tenancy.md §5.3: X-OJS-Tenant applies to every job of a batch, as to a
// single PUSH; a job naming another tenant refuses the whole batch, naming its index.
TEST_F(BatchPush, TenantHeaderFillsEveryJobsMetaTenantId) {
  ojs::HttpClient client({broker.url()});
  const std::vector<std::string> headers{"Content-Type: application/openjobspec+json", "X-OJS-Tenant: acme"};
  const json batch = {{"jobs", {job("t.one", "batch-tenant"), job("t.two", "batch-tenant")}}};
  auto r = client.request("POST", "/ojs/v1/jobs/batch", batch.dump(), headers);
  ASSERT_EQ(r.status, 201) << r.body;
  const json reply = json::parse(r.body);  // named: a range-for over a temporary's element reads freed memory
  ASSERT_EQ(reply["jobs"].size(), 2u);
  for (const auto& j : reply["jobs"]) EXPECT_EQ(j["meta"]["tenant_id"], "acme") << j.dump();

  json other = job("t.three", "batch-tenant");
  other["meta"] = {{"tenant_id", "globex"}};
  auto refused = client.request("POST", "/ojs/v1/jobs/batch", json({{"jobs", {job("t.four", "batch-tenant"), other}}}).dump(), headers);
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_EQ(json::parse(refused.body)["error"]["details"]["field"], "jobs[1].meta.tenant_id") << refused.body;
  EXPECT_EQ(api.get("/ojs/v1/queues/batch-tenant/stats").body["stats"]["available"], 2) << "nothing of the refused batch is stored";
}
