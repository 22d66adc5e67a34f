// CPU cores, host memory and TPU chips of running jobs are part of a worker's load,
// judged by the same scheduler as its GPUs (the free_cpu_cores, free_host_memory and
// free_tpu_chips predicates): with a real broker and Redis, two 64-core 500 GB jobs
// never run together on a 64-core 512 GB worker, nor two full-slice jobs on a 16-chip
// TPU worker, whether they come in one FETCH or two, and the job that waits says why.
#include <gtest/gtest.h>

#include <fstream>

#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

json with_caps(const json& caps) { return {{"capabilities", caps}}; }

json tpu_caps() {
  std::ifstream in(std::string(OJS_SOURCE_DIR) + "/examples/workers/tpu-v5e.json");
  return json::parse(in);
}

// The waiting job's diagnosis names `predicate` among its refusals.
bool diagnosis_names(Api& api, const std::string& id, const std::string& predicate) {
  const auto d = api.get("/ojs/v1/jobs/" + id + "/diagnosis").body.dump();
  return d.find(predicate) != std::string::npos;
}

}  // namespace

TEST(HostResourcesHeld, TwoFullHostJobsNeverShareAWorker) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  const json host = {{"accelerator", "cpu"}, {"cpu_cores", 64}, {"memory_gb", 512}};
  const json big = ml_job("host", {{"ext_ml_cpu_cores", 64}, {"ext_ml_memory_gb", 500}});
  const auto a = api.push(big);
  const auto b = api.push(big);

  // One FETCH asking for two: the first claim's cores count for the second.
  const auto got = api.fetch({"host"}, "big-host", 2, with_caps(host));
  ASSERT_EQ(got.size(), 1u) << got.dump();
  // Later FETCHes while it runs: nothing.
  EXPECT_TRUE(api.fetch({"host"}, "big-host", 2, with_caps(host)).empty());
  const std::string waiting = got[0]["id"] == a ? b : a;
  EXPECT_EQ(api.get("/ojs/v1/jobs/" + waiting).body["job"]["state"], "available");
  EXPECT_TRUE(diagnosis_names(api, waiting, "free_cpu_cores")) << api.get("/ojs/v1/jobs/" + waiting + "/diagnosis").body.dump();

  // A small job fits in what is left (12 GB); the second big one once the first is done.
  const auto small = api.push(ml_job("host", {{"ext_ml_memory_gb", 8}}));
  const auto beside = api.fetch({"host"}, "big-host", 1, with_caps(host));
  ASSERT_EQ(beside.size(), 1u) << beside.dump();
  EXPECT_EQ(beside[0]["id"], small);
  ASSERT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", got[0]["id"]}, {"worker_id", "big-host"}}).status, 200);
  const auto next = api.fetch({"host"}, "big-host", 1, with_caps(host));
  ASSERT_EQ(next.size(), 1u) << next.dump();
  EXPECT_EQ(next[0]["id"], waiting);
}

TEST(HostResourcesHeld, TwoFullSliceTpuJobsNeverShareASlice) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  const json slice_job = ml_job("tpu", {{"ext_ml_tpu_type", "v5e"}, {"ext_ml_tpu_topology", "4x4"}});
  const auto a = api.push(slice_job);
  const auto b = api.push(slice_job);
  const auto got = api.fetch({"tpu"}, "slice", 2, with_caps(tpu_caps()));
  ASSERT_EQ(got.size(), 1u) << got.dump();
  EXPECT_TRUE(api.fetch({"tpu"}, "slice", 1, with_caps(tpu_caps())).empty());
  const std::string waiting = got[0]["id"] == a ? b : a;
  EXPECT_TRUE(diagnosis_names(api, waiting, "free_tpu_chips")) << api.get("/ojs/v1/jobs/" + waiting + "/diagnosis").body.dump();
  ASSERT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", got[0]["id"]}, {"worker_id", "slice"}}).status, 200);
  const auto next = api.fetch({"tpu"}, "slice", 1, with_caps(tpu_caps()));
  ASSERT_EQ(next.size(), 1u) << next.dump();
  EXPECT_EQ(next[0]["id"], waiting);
}
