// The durable-execution checkpoint (ojs-durable-execution.md) beside the ML
// one on the same route: what the public conformance cases (ctest
// conformance_ExtDurableExecution) do not exercise. A real redis-server and broker.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "support/processes.hpp"

using namespace ojs::test;
using nlohmann::json;

namespace {

class DurableCheckpoint : public ::testing::Test {
 protected:
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};

  std::string fetched(const std::string& queue, const std::string& worker) {
    api.push({{"type", "t"}, {"args", json::array()}, {"options", {{"queue", queue}}}});
    const auto jobs = api.fetch({queue}, worker, 1);
    EXPECT_EQ(jobs.size(), 1u);
    return jobs.empty() ? std::string() : jobs[0]["id"].get<std::string>();
  }
  std::string path(const std::string& id) { return "/ojs/v1/jobs/" + id + "/checkpoint"; }
};

}  // namespace

// The job handed back and fetched again carries its state (6.1), and a worker naming
// itself must hold the job.
TEST_F(DurableCheckpoint, TheNextAttemptResumesFromTheStateAndOnlyTheHolderSavesAsItself) {
  const auto id = fetched("dur-resume", "w1");
  EXPECT_EQ(api.call("PUT", path(id), {{"state", {{"cursor", "c-7"}}}, {"worker_id", "w2"}}).status, 409) << "w2 does not hold it";
  const auto saved = api.call("POST", path(id), {{"state", {{"cursor", "c-7"}}}, {"worker_id", "w1"}});
  ASSERT_EQ(saved.status, 200) << saved.body.dump();
  EXPECT_EQ(saved.body["checkpoint"]["sequence"], 1);
  ASSERT_EQ(api.post("/ojs/v1/workers/nack", {{"job_id", id}, {"worker_id", "w1"}, {"requeue", true},
                                               {"error", {{"message", "moved"}, {"retryable", true}}}}).status, 200);
  json again;
  for (int i = 0; i < 50 && again.is_null(); ++i) {  // a requeue is available at once; a retry after its backoff
    const auto jobs = api.fetch({"dur-resume"}, "w2", 1);
    if (!jobs.empty()) again = jobs[0];
    else std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_FALSE(again.is_null());
  EXPECT_EQ(again["checkpoint"], (json{{"state", {{"cursor", "c-7"}}}, {"sequence", 1}})) << again.dump();
}

// A state over 1 MiB as JSON is refused 413 naming the field; a body without `state`
// on PUT is 400; nothing is stored either way.
TEST_F(DurableCheckpoint, OversizedAndMissingStatesAreRefusedNamingTheField) {
  const auto id = fetched("dur-limits", "w1");
  const auto big = api.call("PUT", path(id), {{"state", std::string(1048576, 'x')}});  // + 2 quotes
  EXPECT_EQ(big.status, 413) << big.body.dump();
  EXPECT_EQ(big.body["error"]["details"]["field"], "state");
  const auto missing = api.call("PUT", path(id), {{"cursor", 1}});
  EXPECT_EQ(missing.status, 400);
  EXPECT_EQ(missing.body["error"]["details"]["field"], "state");
  EXPECT_EQ(api.get(path(id)).status, 404) << "no checkpoint of either kind";
  EXPECT_EQ(api.call("PUT", path(id), {{"state", std::string(1048574, 'x')}}).status, 200) << "exactly the limit";
}

// The ML checkpoint and the durable one live side by side: the GET answers both, and
// deleting the durable one leaves the ML history.
TEST_F(DurableCheckpoint, TheMlCheckpointAndTheDurableStateLiveSideBySide) {
  const auto id = fetched("dur-both", "w1");
  ASSERT_EQ(api.post(path(id), {{"step", 10}, {"storage_key", "k/10"}, {"worker_id", "w1"}}).status, 200);
  ASSERT_EQ(api.call("PUT", path(id), {{"state", {1, 2, 3}}}).status, 200);
  auto both = api.get(path(id));
  ASSERT_EQ(both.status, 200);
  EXPECT_EQ(both.body["last_checkpoint"]["step"], 10);
  EXPECT_EQ(both.body["state"], json({1, 2, 3}));
  EXPECT_EQ(both.body["checkpoint"]["state"], json({1, 2, 3}));
  const auto deleted = api.call("DELETE", path(id), json());
  EXPECT_EQ(deleted.status, 200);
  EXPECT_EQ(deleted.body["deleted"], true);
  const auto ml_only = api.get(path(id));
  ASSERT_EQ(ml_only.status, 200) << "the ML checkpoint remains";
  EXPECT_FALSE(ml_only.body.contains("state"));
  EXPECT_EQ(ml_only.body["last_checkpoint"]["step"], 10);
}
