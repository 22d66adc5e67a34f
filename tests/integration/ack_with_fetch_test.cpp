// ACK and NACK with an optional `fetch` (docs/http-api.md "ACK with fetch"):
// the report is applied, then the worker's next jobs are claimed in the same request.
#include <gtest/gtest.h>

#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

class AckWithFetch : public ::testing::Test {
 protected:
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};

  std::string push(const std::string& queue, json extra = json::object()) {
    json job = {{"type", "t"}, {"args", json::array()}, {"options", {{"queue", queue}}}};
    job.update(extra);
    return api.push(job);
  }
  std::string state_of(const std::string& id) { return api.get("/ojs/v1/jobs/" + id).body["job"]["state"]; }
};

TEST_F(AckWithFetch, AckHandsBackTheNextJob) {
  const auto first = push("awf");
  const auto second = push("awf");
  const auto jobs = api.fetch({"awf"}, "w1");
  ASSERT_EQ(jobs.size(), 1u);
  ASSERT_EQ(jobs[0]["id"], first);
  const auto r = api.post("/ojs/v1/workers/ack", {{"job_id", first}, {"worker_id", "w1"}, {"result", 1},
                                                  {"fetch", {{"queues", {"awf"}}, {"count", 4}}}});
  ASSERT_EQ(r.status, 200) << r.body.dump();
  EXPECT_EQ(r.body["state"], "completed");
  EXPECT_EQ(r.body["job_id"], first);
  EXPECT_EQ(r.body["acknowledged"], true);
  ASSERT_TRUE(r.body.contains("fetch")) << r.body.dump();
  const auto& fetched = r.body["fetch"];
  ASSERT_EQ(fetched["jobs"].size(), 1u) << fetched.dump();
  EXPECT_EQ(fetched["jobs"][0]["id"], second);
  EXPECT_EQ(fetched["jobs"][0]["state"], "active");
  EXPECT_EQ(fetched["job"]["id"], second);
  EXPECT_EQ(fetched["state"], "running");
  EXPECT_FALSE(fetched.contains("error"));
  EXPECT_EQ(state_of(first), "completed");
  EXPECT_EQ(state_of(second), "active");
  EXPECT_EQ(api.get("/ojs/v1/jobs/" + second).body["job"]["worker_id"], "w1");
  // The job fetched this way is the worker's like any other: its ACK is accepted.
  EXPECT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", second}, {"worker_id", "w1"}}).status, 200);
}

TEST_F(AckWithFetch, NackHandsBackTheNextJobAndAnEmptyQueueAnswersNoJobs) {
  const auto first = push("awf-nack", {{"retry", {{"max_attempts", 1}}}});
  ASSERT_EQ(api.fetch({"awf-nack"}, "w1").size(), 1u);
  const auto r = api.post("/ojs/v1/workers/nack", {{"job_id", first}, {"worker_id", "w1"},
                                                   {"error", {{"code", "boom"}, {"message", "failed"}}},
                                                   {"fetch", {{"queues", {"awf-nack"}}}}});
  ASSERT_EQ(r.status, 200) << r.body.dump();
  EXPECT_NE(state_of(first), "active");
  ASSERT_TRUE(r.body.contains("fetch"));
  EXPECT_TRUE(r.body["fetch"]["jobs"].empty());  // max_attempts 1: nothing left to hand back
  EXPECT_FALSE(r.body["fetch"].contains("job"));
}

TEST_F(AckWithFetch, TheFetchPartMatchesCapabilitiesLikeAFetch) {
  const auto plain = push("awf-caps");
  const auto gpu = push("awf-caps", {{"ext_ml_gpu_count", 1}, {"options", {{"queue", "awf-caps"}, {"priority", 10}}}});
  ASSERT_EQ(api.fetch({"awf-caps"}, "w1")[0]["id"], plain);  // a plain worker never gets the GPU job
  push("awf-caps");
  auto r = api.post("/ojs/v1/workers/ack", {{"job_id", plain}, {"worker_id", "w1"}, {"fetch", {{"queues", {"awf-caps"}}}}});
  ASSERT_EQ(r.status, 200);
  ASSERT_EQ(r.body["fetch"]["jobs"].size(), 1u);
  const std::string next = r.body["fetch"]["jobs"][0]["id"];
  EXPECT_NE(next, gpu);
  const json caps = {{"gpu", {{"type", "nvidia-a100"}, {"count", 1}, {"memory_gb", 80}}}};
  r = api.post("/ojs/v1/workers/ack",
               {{"job_id", next}, {"worker_id", "w1"}, {"fetch", {{"queues", {"awf-caps"}}, {"capabilities", caps}}}});
  ASSERT_EQ(r.status, 200);
  ASSERT_EQ(r.body["fetch"]["jobs"].size(), 1u);
  EXPECT_EQ(r.body["fetch"]["jobs"][0]["id"], gpu);
}

// A malformed `fetch` is refused before anything is done: the job stays the worker's.
TEST_F(AckWithFetch, AMalformedFetchIsRefusedBeforeTheAck) {
  const auto id = push("awf-bad");
  ASSERT_EQ(api.fetch({"awf-bad"}, "w1").size(), 1u);
  auto r = api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "w1"}, {"fetch", {{"queues", "awf-bad"}}}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body["error"]["details"]["field"], "fetch.queues") << r.body.dump();
  r = api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "w1"}, {"fetch", json::array()}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body["error"]["details"]["field"], "fetch");
  r = api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "w1"}, {"fetch", {{"queues", {"awf-bad"}}, {"worker_id", "w2"}}}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body["error"]["details"]["field"], "fetch.worker_id");
  r = api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"fetch", {{"queues", {"awf-bad"}}}}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body["error"]["details"]["field"], "worker_id");
  r = api.post("/ojs/v1/workers/nack", {{"job_id", id}, {"worker_id", "w1"}, {"fetch", {{"queues", {"awf-bad"}}, {"count", 0}}}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body["error"]["details"]["field"], "fetch.count");
  EXPECT_EQ(state_of(id), "active");
  EXPECT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "w1"}}).status, 200);
}

// The ACK stands when the fetch part cannot be served: a draining broker takes no new work.
TEST_F(AckWithFetch, WhileDrainingTheAckStandsAndTheFetchSaysWhy) {
  const auto id = push("awf-drain");
  push("awf-drain");
  ASSERT_EQ(api.fetch({"awf-drain"}, "w1").size(), 1u);
  ASSERT_EQ(api.post("/ojs/v1/admin/drain", json::object()).status, 200);
  const auto r = api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "w1"}, {"fetch", {{"queues", {"awf-drain"}}}}});
  ASSERT_EQ(r.status, 200) << r.body.dump();
  EXPECT_EQ(r.body["state"], "completed");
  EXPECT_TRUE(r.body["fetch"]["jobs"].empty());
  EXPECT_EQ(r.body["fetch"]["error"]["code"], "backend_unavailable") << r.body.dump();
  EXPECT_EQ(r.body["fetch"]["error"]["retryable"], true);
  EXPECT_EQ(state_of(id), "completed");
  EXPECT_EQ(api.call("DELETE", "/ojs/v1/admin/drain").status, 200);
}

// A worker told to be quiet hears it in the fetch part and gets no job.
TEST_F(AckWithFetch, AQuietWorkerGetsItsDirectiveAndNoJob) {
  const auto id = push("awf-quiet");
  push("awf-quiet");
  ASSERT_EQ(api.fetch({"awf-quiet"}, "w1").size(), 1u);
  ASSERT_EQ(api.post("/ojs/v1/admin/workers/w1/quiet", json::object()).status, 200);
  const auto r = api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "w1"}, {"fetch", {{"queues", {"awf-quiet"}}}}});
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.body["fetch"]["state"], "quiet");
  EXPECT_TRUE(r.body["fetch"]["jobs"].empty());
}
