// Anti-affinity works both ways (a job refuses a worker whose running
// jobs declare anti-affinity against it) and over every documented label
// spelling: the spec example's job_type, meta.compute.runtime, meta.tenant_id,
// meta.labels as an object or a worker-info style array.
#include <gtest/gtest.h>

#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

json anti(const std::string& key, const std::string& value) {
  return {{"required", {{{"key", key}, {"operator", "In"}, {"values", {value}}}}}};
}

class AntiAffinity : public ::testing::Test {
 protected:
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  const json caps = example_worker("cpu-node");

  json fetch(const std::string& queue, const std::string& worker) {
    auto r = api.post("/ojs/v1/workers/fetch", {{"queues", {queue}}, {"worker_id", worker}, {"capabilities", caps}, {"count", 1}});
    EXPECT_EQ(r.status, 200) << r.body.dump();
    return r.body["jobs"];
  }
  // Runs `first` on worker "w1", then offers `second` to w1 (refused) and to w2 (taken).
  void expect_kept_apart(const std::string& queue, json first, json second) {
    first["options"] = {{"queue", queue}};
    second["options"] = {{"queue", queue}};
    const auto running = api.push(first);
    const auto got = fetch(queue, "w1");
    ASSERT_EQ(got.size(), 1u);
    ASSERT_EQ(got[0]["id"], running);
    const auto waiting = api.push(second);
    EXPECT_TRUE(fetch(queue, "w1").empty()) << "placed beside a job it is kept apart from";
    const auto info = api.get("/ojs/v1/jobs/" + waiting).body["job"];
    EXPECT_EQ(info["state"], "available") << info.dump();
    EXPECT_EQ(info["attempt"].get<int>(), 0) << "a hand-back must not consume an attempt";
    const auto other = fetch(queue, "w2");
    ASSERT_EQ(other.size(), 1u);
    EXPECT_EQ(other[0]["id"], waiting);
  }
};

json job(const std::string& type) { return {{"type", type}, {"args", json::array()}}; }

}  // namespace

// The spec example (ojs-ml-resources.md 7.3): the running job declares it; the other is placed after.
TEST_F(AntiAffinity, RunningJobsAntiAffinityOnJobTypeRefusesTheNewcomer) {
  json declaring = job("ml.serve");
  declaring["ext_ml_anti_affinity"] = anti("job_type", "ml.train.large");
  expect_kept_apart("aa-type", declaring, job("ml.train.large"));
}

TEST_F(AntiAffinity, RunningJobsAntiAffinityOnSdkRuntimeRefusesTheNewcomer) {
  json declaring = job("ml.a");
  declaring["meta"] = {{"anti_affinity", anti("runtime", "onnx")}};
  json runtime = job("ml.b");
  runtime["meta"] = {{"compute", {{"runtime", "onnx"}}}};
  expect_kept_apart("aa-runtime", declaring, runtime);
  // Its class was refused by the predicate, so the diagnosis says why.
}

TEST_F(AntiAffinity, NewcomersAntiAffinityReadsMetaLabelsArrayAndTenant) {
  json labelled = job("ml.a");
  labelled["meta"] = {{"labels", {"team=red", "canary"}}};
  json declaring = job("ml.b");
  declaring["ext_ml_anti_affinity"] = anti("team", "red");
  expect_kept_apart("aa-labels", labelled, declaring);

  json tenant = job("ml.a");
  tenant["meta"] = {{"tenant_id", "acme"}};
  json other = job("ml.b");
  other["ext_ml_anti_affinity"] = anti("tenant_id", "acme");
  expect_kept_apart("aa-tenant", tenant, other);
}

TEST_F(AntiAffinity, RunningJobsAntiAffinityOnMetaLabelsObjectRefusesTheNewcomer) {
  json declaring = job("ml.a");
  declaring["ext_ml_anti_affinity"] = anti("replica_of", "llama");
  json replica = job("ml.b");
  replica["meta"] = {{"labels", {{"replica_of", "llama"}}}};
  expect_kept_apart("aa-object", declaring, replica);
}

TEST_F(AntiAffinity, UnknownKeysInTermsAreRefusedNamingThem) {
  json bad = job("ml.a");
  bad["options"] = {{"queue", "aa-bad"}};
  bad["ext_ml_anti_affinity"] = {{"required", {{{"key", "job_type"}, {"operator", "In"}, {"values", {"x"}}, {"topology", "host"}}}}};
  auto r = api.post("/ojs/v1/jobs", bad);
  EXPECT_EQ(r.status, 400) << r.body.dump();
  EXPECT_EQ(r.body["error"]["details"]["field"], "ext_ml_anti_affinity.required[0].topology");
  bad["ext_ml_anti_affinity"] = {{"required", json::array()}, {"preferred", json::array()}};
  r = api.post("/ojs/v1/jobs", bad);
  EXPECT_EQ(r.status, 400) << r.body.dump();
  EXPECT_EQ(r.body["error"]["details"]["field"], "ext_ml_anti_affinity.preferred");
}
