// The diagnosis tells the truth about a waiting job, by verdict code
// (ok, wait, unresolvable, preemptible, held) and plugin, with liveness: a locality
// hold, a quiet worker, a dead worker, a pending preemption, a job no worker of the
// fleet could ever take and a job only waiting for busy capacity. A real
// redis-server and broker; workers simulated by HTTP calls with capabilities.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "support/eventually.hpp"
#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;
using namespace std::chrono_literals;

namespace {

json caps_body(const std::string& name) { return {{"capabilities", example_worker(name)}}; }

// A worker whose only GPUs are two MIG slices of one H100: single-GPU jobs only.
json mig_worker() {
  json device = {{"memory_gb", 40}, {"numa_node", 0}, {"mig_profile", "3g.40gb"}, {"parent_index", 0}};
  json a = device, b = device;
  a["index"] = 1;
  a["uuid"] = "MIG-aaaaaaaa-0000-0000-0000-000000000001";
  b["index"] = 2;
  b["uuid"] = "MIG-aaaaaaaa-0000-0000-0000-000000000002";
  return {{"capabilities",
           {{"accelerator", "gpu"}, {"gpu", {{"type", "nvidia-h100"}, {"compute_capability", "9.0"}}}, {"devices", {a, b}}}}};
}

std::string message(const json& d) { return d.value("message", std::string()); }

}  // namespace

class DiagnosisTruth : public ::testing::Test {
 protected:
  RedisServer redis;
  // A locality delay no test outlives: a held job stays held while the test looks.
  BrokerProcess broker{redis.url(), {"--locality-delay-ms", "600000", "--preemption-interval-ms", "100", "--capacity-hold-ms", "3000"}};
  Api api{broker.url()};

  json why(const std::string& id) { return api.get("/ojs/v1/jobs/" + id + "/diagnosis").body["diagnosis"]; }
  json heartbeat(const std::string& worker, const std::vector<std::string>& active) {
    return api.post("/ojs/v1/workers/heartbeat", {{"worker_id", worker}, {"active_jobs", active}}).body;
  }
  // One job of `attrs` fetched and acknowledged by `worker`: its judgement of the class is on record.
  void run_one(const std::string& queue, const json& attrs, const std::string& worker, const json& caps) {
    const auto id = api.push(ml_job(queue, attrs));
    const auto got = api.fetch({queue}, worker, 1, caps);
    ASSERT_EQ(got.size(), 1u);
    ASSERT_EQ(got[0]["id"], id);
    ASSERT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", worker}}).status, 200);
  }
};

TEST_F(DiagnosisTruth, LocalityHoldIsReportedAsHeld) {
  const auto id = api.push(ml_job("dt-local", {{"ext_ml_model_id", "rare-model"}, {"ext_ml_gpu_count", 1}}));
  EXPECT_EQ(api.fetch({"dt-local"}, "cold", 1, caps_body("4xa100-pcie")).size(), 0u);  // held for a warm worker
  const auto d = why(id);
  EXPECT_EQ(d["code"], "held") << d.dump();
  EXPECT_EQ(d["eligible"], 0) << d.dump();
  ASSERT_TRUE(d["by_predicate"].contains("locality_hold")) << d.dump();
  EXPECT_EQ(d["by_predicate"]["locality_hold"]["code"], "held");
  EXPECT_NE(message(d).find("rare-model"), std::string::npos) << message(d);
}

TEST_F(DiagnosisTruth, FormingGangIsReportedAsHeld) {
  const auto id = api.push(ml_job("dt-gang", {{"ext_ml_gpu_count", 1}, {"ext_ml_gang", {{"size", 2}}}}));
  EXPECT_EQ(api.fetch({"dt-gang"}, "g1", 1, caps_body("4xa100-pcie")).size(), 0u);  // joined: GPUs held, no job yet
  const auto d = why(id);
  EXPECT_EQ(d["code"], "held") << d.dump();
  EXPECT_EQ(d["eligible"], 0) << d.dump();
  ASSERT_TRUE(d["by_predicate"].contains("gang_forming")) << d.dump();
}

TEST_F(DiagnosisTruth, OnlyWorkerQuietIsNotEligibleAndSaysQuiet) {
  run_one("dt-quiet", {{"ext_ml_gpu_count", 1}}, "w-quiet", caps_body("l4-inference"));
  ASSERT_EQ(api.post("/ojs/v1/admin/workers/w-quiet/quiet", json::object()).status, 200);
  const auto id = api.push(ml_job("dt-quiet", {{"ext_ml_gpu_count", 1}}));
  const auto reply = api.post("/ojs/v1/workers/fetch", {{"queues", {"dt-quiet"}}, {"worker_id", "w-quiet"},
                                                        {"capabilities", example_worker("l4-inference")}});
  EXPECT_EQ(reply.body["state"], "quiet");
  EXPECT_TRUE(reply.body["jobs"].empty());
  const auto d = why(id);
  EXPECT_EQ(d["eligible"], 0) << d.dump();
  EXPECT_EQ(d["code"], "wait") << d.dump();
  ASSERT_TRUE(d["by_predicate"].contains("worker_quiet")) << d.dump();
  EXPECT_NE(message(d).find("quiet"), std::string::npos) << message(d);
}

TEST_F(DiagnosisTruth, PendingPreemptionDuringTheGracePeriodIsReported) {
  const auto l4 = caps_body("l4-inference");  // the only capable worker: 1 GPU
  const auto spot = api.push(ml_job("dt-spot", {{"ext_ml_gpu_count", 1}, {"ext_ml_priority_class", "spot"},
                                                {"ext_ml_preemption_grace_period_s", 60}}));
  ASSERT_EQ(api.fetch({"dt-res", "dt-spot"}, "l4", 1, l4).size(), 1u);
  const auto reserved = api.push(ml_job("dt-res", {{"ext_ml_gpu_count", 1}, {"ext_ml_priority_class", "reserved"}}));
  // The controller (every 100 ms) marks the spot job; the worker hears it by heartbeat.
  ASSERT_TRUE(eventually(10000, [&] { return !heartbeat("l4", {spot})["job_directives"].empty(); }));
  // In the grace period the spot job still runs: the worker cannot take the reserved job yet.
  EXPECT_EQ(api.fetch({"dt-res"}, "l4", 1, l4).size(), 0u);
  const auto d = why(reserved);
  EXPECT_EQ(d["code"], "preemptible") << d.dump();
  EXPECT_EQ(d["eligible"], 0) << d.dump();
  ASSERT_TRUE(d.contains("preemption")) << d.dump();
  EXPECT_EQ(d["preemption"]["worker_id"], "l4");
  EXPECT_EQ(d["preemption"]["victims"], json::array({spot}));
  ASSERT_TRUE(d["by_predicate"].contains("preemption_pending")) << d.dump();
  EXPECT_NE(message(d).find("preempt"), std::string::npos) << message(d);
}

TEST_F(DiagnosisTruth, TwoGpuJobOnMigSlicedFleetIsUnresolvable) {
  const auto id = api.push(ml_job("dt-mig", {{"ext_ml_gpu_count", 2}}));
  EXPECT_EQ(api.fetch({"dt-mig"}, "mig-a", 1, mig_worker()).size(), 0u);
  EXPECT_EQ(api.fetch({"dt-mig"}, "mig-b", 1, mig_worker()).size(), 0u);
  const auto d = why(id);
  EXPECT_EQ(d["code"], "unresolvable") << d.dump();
  EXPECT_EQ(d["by_code"]["unresolvable"], 2) << d.dump();
  EXPECT_EQ(message(d).find("have < 2 free GPUs"), std::string::npos) << message(d);
  EXPECT_EQ(d["by_predicate"]["free_gpus"]["code"], "unresolvable") << d.dump();
}

TEST_F(DiagnosisTruth, FitsNoWorkerIsToldFromBusyNowInJobQueueAndOjsctl) {
  const std::string q = "dt-busy";
  const auto never = api.push(ml_job(q, {{"ext_ml_gpu_count", 2}}));
  const auto one_a = api.push(ml_job(q, {{"ext_ml_gpu_count", 1}}));
  const auto one_b = api.push(ml_job(q, {{"ext_ml_gpu_count", 1}}));
  const auto busy = api.push(ml_job(q, {{"ext_ml_gpu_count", 1}}));
  ASSERT_EQ(api.fetch({q}, "mig-c", 1, mig_worker()).size(), 1u);  // both slices taken
  ASSERT_EQ(api.fetch({q}, "mig-c", 1, mig_worker()).size(), 1u);
  EXPECT_EQ(api.fetch({q}, "mig-c", 1, mig_worker()).size(), 0u);  // the third 1-GPU job waits
  (void)one_b;

  EXPECT_EQ(why(never)["code"], "unresolvable") << why(never).dump();
  EXPECT_EQ(why(busy)["code"], "wait") << why(busy).dump();
  const auto info = api.get("/ojs/v1/jobs/" + busy).body["job"];
  EXPECT_EQ(info["diagnosis"]["code"], "wait") << info.dump();

  const auto queue = api.get("/ojs/v1/queues/" + q + "/diagnosis").body;
  std::set<std::string> codes;
  for (const auto& c : queue["classes"]) codes.insert(c.value("code", std::string()));
  EXPECT_EQ(codes, (std::set<std::string>{"unresolvable", "wait"})) << queue.dump();

  const std::string ojsctl = binary_path("ojsctl/ojsctl");
  auto out = run_process({ojsctl, "--url", broker.url(), "why", never}, 30);
  EXPECT_EQ(out.exit_code, 0) << out.output;
  EXPECT_NE(out.output.find("Verdict:      unresolvable"), std::string::npos) << out.output;
  out = run_process({ojsctl, "--url", broker.url(), "why", busy}, 30);
  EXPECT_NE(out.output.find("Verdict:      wait"), std::string::npos) << out.output;

  // A running job is past waiting: no verdict of its class's waiting jobs is its own.
  const auto running = why(one_a);
  EXPECT_FALSE(running.contains("code")) << running.dump();
  EXPECT_EQ(message(running).rfind("not waiting: active on worker mig-c", 0), 0u) << running.dump();
  out = run_process({ojsctl, "--url", broker.url(), "why", one_a}, 30);
  EXPECT_EQ(out.output.find("Verdict:"), std::string::npos) << out.output;
}

// --worker-dead-after-ms short enough to pass within a test; the diagnosis window
// (120 s) outlives it, as in production (60 s).
class DiagnosisLiveness : public ::testing::Test {
 protected:
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--worker-dead-after-ms", "1000"}};
  Api api{broker.url()};
};

TEST_F(DiagnosisLiveness, OnlyWorkerDeadIsNotEligibleAndNotListedAsRunning) {
  const std::string q = "dt-dead";
  const auto first = api.push(ml_job(q, {{"ext_ml_gpu_count", 1}}));
  ASSERT_EQ(api.fetch({q}, "w-dead", 1, caps_body("l4-inference")).size(), 1u);
  ASSERT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", first}, {"worker_id", "w-dead"}}).status, 200);
  const auto id = api.push(ml_job(q, {{"ext_ml_gpu_count", 1}}));
  // The worker falls silent; wait until the broker counts it stale.
  json listed = json::object();
  ASSERT_TRUE(eventually(10000, [&] {
    const auto reply = api.get("/ojs/v1/admin/workers");  // named: the loop must not outlive it
    for (const auto& w : reply.body["items"])
      if (w["id"] == "w-dead") listed = w;
    return listed.value("stale", false);
  })) << listed.dump();
  EXPECT_EQ(listed["state"], "stale") << listed.dump();
  EXPECT_EQ(listed["directive"], "running") << listed.dump();

  const auto d = api.get("/ojs/v1/jobs/" + id + "/diagnosis").body["diagnosis"];
  EXPECT_EQ(d["eligible"], 0) << d.dump();
  ASSERT_TRUE(d["by_predicate"].contains("worker_lost")) << d.dump();
  EXPECT_NE(message(d).find("lost"), std::string::npos) << message(d);
}
