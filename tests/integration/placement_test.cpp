// Capability-aware FETCH end to end: simulated workers (examples/workers/*.json)
// poll a real broker; hard constraints are respected, refusals explained,
// preferences and locality honoured, GPUs not oversubscribed.
#include <gtest/gtest.h>

#include <thread>

#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {
json caps_body(const std::string& name) { return {{"capabilities", example_worker(name)}}; }
}  // namespace

class Placement : public ::testing::Test {
 protected:
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--locality-delay-ms", "1500"}};
  Api api{broker.url()};
};

TEST_F(Placement, HardConstraintsAreRespectedAndRefusalsExplained) {
  const auto big = api.push(ml_job("pl-hard", {{"ext_ml_gpu_type", "nvidia-h100"}, {"ext_ml_gpu_count", 8}, {"ext_ml_gpu_memory_gb", 80},
                                            {"ext_ml_gpu_interconnect", "nvlink"}}));
  // Workers that cannot run it get nothing, whatever order they poll in.
  EXPECT_EQ(api.fetch({"pl-hard"}, "a100-box", 1, caps_body("4xa100-pcie")).size(), 0u);
  EXPECT_EQ(api.fetch({"pl-hard"}, "l4-box", 1, caps_body("l4-inference")).size(), 0u);
  EXPECT_EQ(api.fetch({"pl-hard"}, "cpu-box", 1, caps_body("cpu-node")).size(), 0u);
  EXPECT_EQ(api.fetch({"pl-hard"}, "plain").size(), 0u);

  auto info = api.get("/ojs/v1/jobs/" + big).body["job"];
  ASSERT_TRUE(info.contains("diagnosis")) << info.dump();
  const auto& d = info["diagnosis"];
  EXPECT_EQ(d["workers_seen"], 4);
  EXPECT_EQ(d["eligible"], 0);
  EXPECT_EQ(d["by_predicate"]["gpu_type"]["count"], 3);   // A100, L4 and the CPU node
  EXPECT_EQ(d["by_predicate"]["capabilities"]["count"], 1);  // the plain worker
  EXPECT_NE(d["message"].get<std::string>().find("0/4 workers"), std::string::npos) << d["message"];

  auto jobs = api.fetch({"pl-hard"}, "dgx", 1, caps_body("dgx-h100"));
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0]["id"], big);
  EXPECT_EQ(jobs[0]["ext_ml_assigned_devices"].size(), 8u);

  auto queue = api.get("/ojs/v1/queues/pl-hard/diagnosis");
  EXPECT_EQ(queue.status, 200);
  EXPECT_EQ(queue.body["classes"].size(), 1u);
}

TEST_F(Placement, EachPredicateRefusesAWorkerThatLacksIt) {
  // One job per constraint; the A100 PCIe box (40 GB, cc 8.0, region us-west-2) lacks each.
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"ext_ml_gpu_memory_gb", 80}}, "gpu_memory"},
      {{{"ext_ml_gpu_compute_capability", "9.0"}}, "gpu_compute_capability"},
      {{{"ext_ml_precision", "fp8"}, {"ext_ml_gpu_count", 1}}, "gpu_compute_capability"},
      {{{"ext_ml_gpu_count", 2}, {"ext_ml_gpu_interconnect", "nvlink"}}, "gpu_interconnect"},
      {{{"ext_ml_gpu_count", 8}}, "gpu_count"},
      {{{"ext_ml_memory_gb", 4096}}, "host_memory"},
      {{{"ext_ml_cpu_cores", 1000}}, "cpu_cores"},
      {{{"ext_ml_node_selector", {{"region", "us-east-1"}}}}, "node_selector"},
      {{{"ext_ml_affinity", {{"required", {{{"key", "region"}, {"operator", "In"}, {"values", {"eu-west-1"}}}}}}}}, "required_affinity"},
      {{{"ext_ml_model_id", "llama-3.1-70b"}, {"ext_ml_model_version", "3.1.0"}}, "model_pin"},
      {{{"ext_ml_runtime", "vllm"}}, "runtime"},
      {{{"ext_ml_tpu_type", "v5e"}}, "accelerator"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::string queue = "pl-pred-" + std::to_string(i);
    const auto id = api.push(ml_job(queue, cases[i].first));
    EXPECT_EQ(api.fetch({queue}, "a100-box", 1, caps_body("4xa100-pcie")).size(), 0u) << cases[i].first.dump();
    auto d = api.get("/ojs/v1/jobs/" + id + "/diagnosis").body["diagnosis"];
    EXPECT_TRUE(d["by_predicate"].contains(cases[i].second)) << cases[i].first.dump() << " -> " << d.dump();
    EXPECT_FALSE(d["by_predicate"][cases[i].second]["sample_reason"].get<std::string>().empty());
  }
}

TEST_F(Placement, JobPreferringNvlinkGoesToTheNvlinkWorkerWhenBothPoll) {
  const json prefers_nvlink = {{"ext_ml_gpu_count", 2},
                               {"ext_ml_affinity", {{"preferred", {{{"key", "gpu_interconnect"}, {"operator", "In"}, {"values", {"nvlink"}}, {"weight", 90}}}}}}};
  // Both workers poll; the PCIe one first. Warm up the class so both have been seen.
  api.push(ml_job("pl-pref", prefers_nvlink));
  api.fetch({"pl-pref"}, "dgx", 1, caps_body("dgx-h100"));  // takes the warm-up job
  const auto id = api.push(ml_job("pl-pref", prefers_nvlink));
  EXPECT_EQ(api.fetch({"pl-pref"}, "pcie", 1, caps_body("4xa100-pcie")).size(), 0u);
  auto jobs = api.fetch({"pl-pref"}, "dgx", 1, caps_body("dgx-h100"));
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0]["id"], id);
}

TEST_F(Placement, ModelJobWaitsItsLocalityDelayThenRunsCold) {
  // A model no example worker has loaded.
  const auto id = api.push(ml_job("pl-local", {{"ext_ml_model_id", "rare-model"}, {"ext_ml_gpu_count", 1}}));
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(api.fetch({"pl-local"}, "cold", 1, caps_body("4xa100-pcie")).size(), 0u);  // held for a warm worker
  json got;
  while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5)) {
    auto jobs = api.fetch({"pl-local"}, "cold", 1, caps_body("4xa100-pcie"));
    if (!jobs.empty()) {
      got = jobs[0];
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(got.is_null()) << "soft locality must never block forever";
  EXPECT_EQ(got["id"], id);
  EXPECT_GE(waited, 1200);  // held for (about) the 1.5 s locality delay

  // A warm worker gets it at once.
  json warm = example_worker("4xa100-pcie");
  warm["models_loaded"] = {{{"model_id", "rare-model"}, {"model_version", "1"}}};
  const auto id2 = api.push(ml_job("pl-local", {{"ext_ml_model_id", "rare-model"}, {"ext_ml_gpu_count", 1}}));
  auto jobs = api.fetch({"pl-local"}, "warm", 1, {{"capabilities", warm}});
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0]["id"], id2);
}

TEST_F(Placement, TwoFourGpuJobsShareAnEightGpuWorkerAndAThirdWaits) {
  const json four = {{"ext_ml_gpu_count", 4}, {"ext_ml_gpu_type", "nvidia-h100"}};
  const auto a = api.push(ml_job("pl-pack", four));
  const auto b = api.push(ml_job("pl-pack", four));
  const auto c = api.push(ml_job("pl-pack", four));
  auto first = api.fetch({"pl-pack"}, "dgx", 1, caps_body("dgx-h100"));
  auto second = api.fetch({"pl-pack"}, "dgx", 1, caps_body("dgx-h100"));
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(second.size(), 1u);
  std::set<int> devices;
  for (const auto& d : first[0]["ext_ml_assigned_devices"]) devices.insert(d.get<int>());
  for (const auto& d : second[0]["ext_ml_assigned_devices"]) devices.insert(d.get<int>());
  EXPECT_EQ(devices.size(), 8u) << "the two jobs must get disjoint devices";
  EXPECT_EQ(api.fetch({"pl-pack"}, "dgx", 1, caps_body("dgx-h100")).size(), 0u);
  auto d = api.get("/ojs/v1/jobs/" + c + "/diagnosis").body["diagnosis"];
  ASSERT_TRUE(d["by_predicate"].contains("free_gpus")) << d.dump();
  EXPECT_NE(d["by_predicate"]["free_gpus"]["sample_reason"].get<std::string>().find("insufficient free GPUs"), std::string::npos)
      << d.dump();
  // When one finishes, the third runs on the freed devices.
  api.post("/ojs/v1/workers/ack", {{"job_id", first[0]["id"]}});
  auto third = api.fetch({"pl-pack"}, "dgx", 1, caps_body("dgx-h100"));
  ASSERT_EQ(third.size(), 1u);
  EXPECT_EQ(third[0]["id"], c);
  EXPECT_EQ(third[0]["ext_ml_assigned_devices"], first[0]["ext_ml_assigned_devices"]);
  (void)a;
  (void)b;
}

TEST_F(Placement, BadRequirementsAreRejectedNamingTheAttribute) {
  auto r = api.post("/ojs/v1/jobs", ml_job("pl-bad", {{"ext_ml_gpu_count", 0}, {"ext_ml_gpu_type", "nvidia-h100"}}));
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body["error"]["details"]["field"], "ext_ml_gpu_count");
  r = api.post("/ojs/v1/jobs", ml_job("pl-bad", {{"ext_ml_gpu_compute_capability", "8"}}));
  EXPECT_EQ(r.body["error"]["details"]["field"], "ext_ml_gpu_compute_capability");
  r = api.post("/ojs/v1/jobs", ml_job("pl-bad", {{"ext_ml_tpu_topology", "2by4"}}));
  EXPECT_EQ(r.body["error"]["details"]["field"], "ext_ml_tpu_topology");
  r = api.post("/ojs/v1/workers/fetch", {{"queues", {"pl-bad"}}, {"capabilities", {{"gpu", {{"count", -1}}}}}});
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body["error"]["details"]["field"].get<std::string>().find("capabilities.gpu.count"), std::string::npos);
}
