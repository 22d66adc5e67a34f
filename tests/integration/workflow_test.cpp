// OJS level-3 workflows over HTTP against a real broker and redis-server: chain
// result passing, group completion, batch callbacks by outcome, cancel, failing
// steps, GPU steps keeping their ext_ml_* semantics, and the recovery of batch
// callbacks a broker left due (the two-step path of docs/architecture.md).
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

json step(const std::string& type, const std::string& queue, json retry = json::object()) {
  json j = {{"type", type}, {"args", json::array({type})}, {"options", {{"queue", queue}}}};
  if (!retry.empty()) j["options"]["retry"] = retry;
  return j;
}

// Runs redis-cli against the test's Redis; its output without the trailing newline.
std::string redis_cli(const RedisServer& redis, std::vector<std::string> args) {
  std::vector<std::string> argv{"redis-cli", "-p", std::to_string(redis.port())};
  argv.insert(argv.end(), args.begin(), args.end());
  auto run = run_process(argv, 30);
  while (!run.output.empty() && run.output.back() == '\n') run.output.pop_back();
  return run.output;
}

}  // namespace

class Workflows : public ::testing::Test {
 protected:
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};

  json create(const json& body) {
    auto r = api.post("/ojs/v1/workflows", body);
    EXPECT_EQ(r.status, 201) << r.body.dump();
    return r.body["workflow"];
  }
  json workflow(const std::string& id) {
    auto r = api.get("/ojs/v1/workflows/" + id);
    EXPECT_EQ(r.status, 200) << r.body.dump();
    return r.body["workflow"];
  }
  json fetch_one(const std::string& queue, const std::string& worker = "w") {
    auto jobs = api.fetch({queue}, worker);
    EXPECT_EQ(jobs.size(), 1u) << "nothing to fetch from " << queue;
    return jobs.empty() ? json() : jobs[0];
  }
  void ack(const json& job, const json& result) {
    auto r = api.post("/ojs/v1/workers/ack", {{"job_id", job["id"]}, {"result", result}});
    EXPECT_EQ(r.status, 200) << r.body.dump();
  }
  void fail(const json& job) {
    auto r = api.post("/ojs/v1/workers/nack",
                      {{"job_id", job["id"]}, {"error", {{"code", "boom"}, {"message", "step failed"}, {"retryable", false}}}});
    EXPECT_EQ(r.status, 200) << r.body.dump();
  }
};

TEST_F(Workflows, ChainRunsStepsInOrderPassingTheParentsResult) {
  auto wf = create({{"type", "chain"}, {"name", "etl"},
                    {"steps", {step("s.extract", "wf-chain"), step("s.transform", "wf-chain"), step("s.load", "wf-chain")}}});
  EXPECT_EQ(wf["state"], "running");
  EXPECT_EQ(wf["steps_total"], 3);
  EXPECT_EQ(wf["steps"][1]["state"], "waiting");
  const std::string id = wf["id"];

  auto s0 = fetch_one("wf-chain");
  EXPECT_EQ(s0["type"], "s.extract");
  EXPECT_EQ(s0["workflow_id"], id);
  EXPECT_TRUE(api.fetch({"wf-chain"}, "w2").empty());  // step 1 waits for step 0
  ack(s0, {{"rows", 42}});

  auto s1 = fetch_one("wf-chain");
  EXPECT_EQ(s1["type"], "s.transform");
  EXPECT_EQ(s1["parent_results"], json::array({{{"rows", 42}}}));
  ack(s1, {{"path", "/tmp/t"}});

  auto s2 = fetch_one("wf-chain");
  EXPECT_EQ(s2["type"], "s.load");
  EXPECT_EQ(s2["parent_results"], json::array({nullptr, {{"path", "/tmp/t"}}}));  // the immediate parent's
  EXPECT_EQ(workflow(id)["steps_completed"], 2);
  ack(s2, "done");

  wf = workflow(id);
  EXPECT_EQ(wf["state"], "completed");
  EXPECT_EQ(wf["steps_completed"], 3);
  EXPECT_TRUE(wf.contains("completed_at"));
  EXPECT_EQ(wf["steps"][2]["result"], "done");
  for (const auto& s : wf["steps"]) EXPECT_EQ(s["state"], "completed");
}

TEST_F(Workflows, AFailingStepFailsTheChainAndLaterStepsNeverRun) {
  auto wf = create({{"type", "chain"},
                    {"steps", {step("f.ok", "wf-fail"), step("f.bad", "wf-fail", {{"max_attempts", 1}}), step("f.never", "wf-fail")}}});
  const std::string id = wf["id"];
  const std::string never = wf["steps"][2]["job_id"];
  ack(fetch_one("wf-fail"), {{"ok", true}});
  fail(fetch_one("wf-fail"));
  wf = workflow(id);
  EXPECT_EQ(wf["state"], "failed");
  EXPECT_EQ(wf["failed_step_index"], 1);
  EXPECT_EQ(wf["steps_completed"], 1);
  EXPECT_EQ(wf["steps"][1]["state"], "failed");
  EXPECT_EQ(wf["steps"][1]["error"]["code"], "boom");
  EXPECT_EQ(wf["steps"][2]["state"], "cancelled");
  EXPECT_TRUE(api.fetch({"wf-fail"}, "w").empty());
  EXPECT_EQ(api.get("/ojs/v1/jobs/" + never).status, 404);  // never stored
}

TEST_F(Workflows, ARetriedStepIsNotAFailureOfTheChain) {
  auto wf = create({{"type", "chain"}, {"steps", {step("r.flaky", "wf-retry", {{"max_attempts", 2}, {"initial_interval", "PT0.1S"}}),
                                                  step("r.next", "wf-retry")}}});
  auto first = fetch_one("wf-retry");
  api.post("/ojs/v1/workers/nack", {{"job_id", first["id"]}, {"error", {{"message", "transient"}}}});
  EXPECT_EQ(workflow(wf["id"])["state"], "running");
  wait_for_state(api, first["id"], "available", 30000);
  ack(fetch_one("wf-retry"), 1);
  EXPECT_EQ(fetch_one("wf-retry")["type"], "r.next");
}

TEST_F(Workflows, GroupRunsJobsInParallelAndEndsWhenAllHave) {
  auto wf = create({{"type", "group"}, {"jobs", {step("g.a", "wf-group"), step("g.b", "wf-group"), step("g.c", "wf-group")}}});
  EXPECT_EQ(wf["jobs_total"], 3);
  EXPECT_EQ(wf["jobs_completed"], 0);
  const std::string id = wf["id"];
  auto all = api.fetch({"wf-group"}, "w", 3);
  ASSERT_EQ(all.size(), 3u);  // all enqueued at once
  ack(all[0], 1);
  ack(all[1], 2);
  wf = workflow(id);
  EXPECT_EQ(wf["state"], "running");
  EXPECT_EQ(wf["jobs_completed"], 2);
  ack(all[2], 3);
  wf = workflow(id);
  EXPECT_EQ(wf["state"], "completed");
  EXPECT_EQ(wf["jobs_completed"], 3);

  // One failure: the others still finish, then the group is failed.
  auto g2 = create({{"type", "group"}, {"jobs", {step("g.x", "wf-group2"), step("g.y", "wf-group2")}}});
  auto jobs = api.fetch({"wf-group2"}, "w", 2);
  ASSERT_EQ(jobs.size(), 2u);
  fail(jobs[0]);
  EXPECT_EQ(workflow(g2["id"])["state"], "running");
  ack(jobs[1], "fine");
  wf = workflow(g2["id"]);
  EXPECT_EQ(wf["state"], "failed");
  EXPECT_EQ(wf["jobs_completed"], 1);
  EXPECT_EQ(wf["jobs_failed"], 1);
}

TEST_F(Workflows, BatchCallbacksFireOnTheOutcomeWithEveryResult) {
  const json callbacks = {{"on_complete", step("cb.complete", "wf-cb-complete")},
                          {"on_success", step("cb.success", "wf-cb-success")},
                          {"on_failure", step("cb.failure", "wf-cb-failure")}};
  // All succeed: on_complete and on_success, never on_failure.
  auto ok = create({{"type", "batch"}, {"jobs", {step("b.a", "wf-batch"), step("b.b", "wf-batch")}}, {"callbacks", callbacks}});
  EXPECT_EQ(ok["callbacks"]["on_success"]["state"], "waiting");
  auto a = fetch_one("wf-batch");
  auto b = fetch_one("wf-batch");
  ack(a, {{"n", 1}});
  EXPECT_TRUE(api.fetch({"wf-cb-complete"}, "w").empty());  // not before every job ended
  ack(b, {{"n", 2}});
  auto complete = fetch_one("wf-cb-complete");
  EXPECT_EQ(complete["parent_results"], json::array({{{"n", 1}}, {{"n", 2}}}));
  EXPECT_EQ(complete["workflow_id"], ok["id"]);
  EXPECT_EQ(fetch_one("wf-cb-success")["type"], "cb.success");
  EXPECT_TRUE(api.fetch({"wf-cb-failure"}, "w").empty());
  auto wf = workflow(ok["id"]);
  EXPECT_EQ(wf["state"], "completed");
  EXPECT_EQ(wf["callbacks"]["on_complete"]["state"], "active");
  EXPECT_EQ(wf["callbacks"]["on_failure"]["state"], "not_fired");

  // One fails: on_complete and on_failure, never on_success; the failed job's result is null.
  auto bad = create({{"type", "batch"}, {"jobs", {step("b.c", "wf-batch"), step("b.d", "wf-batch", {{"max_attempts", 1}})}},
                     {"callbacks", callbacks}});
  ack(fetch_one("wf-batch"), "c-done");
  fail(fetch_one("wf-batch"));
  EXPECT_EQ(fetch_one("wf-cb-complete")["parent_results"], json::array({"c-done", nullptr}));
  EXPECT_EQ(fetch_one("wf-cb-failure")["type"], "cb.failure");
  EXPECT_TRUE(api.fetch({"wf-cb-success"}, "w").empty());
  EXPECT_EQ(workflow(bad["id"])["state"], "failed");
}

TEST_F(Workflows, CancelStopsWaitingPendingAndActiveJobsOnce) {
  auto wf = create({{"type", "chain"}, {"steps", {step("c.one", "wf-cancel"), step("c.two", "wf-cancel")}}});
  const std::string id = wf["id"];
  auto active = fetch_one("wf-cancel");
  auto r = api.call("DELETE", "/ojs/v1/workflows/" + id);
  ASSERT_EQ(r.status, 200) << r.body.dump();
  EXPECT_EQ(r.body["workflow"]["state"], "cancelled");
  EXPECT_EQ(r.body["workflow"]["steps"][0]["state"], "cancelled");
  EXPECT_EQ(r.body["workflow"]["steps"][1]["state"], "cancelled");
  EXPECT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", active["id"]}}).status, 409);  // the worker's result is refused
  EXPECT_TRUE(api.fetch({"wf-cancel"}, "w").empty());
  EXPECT_EQ(api.call("DELETE", "/ojs/v1/workflows/" + id).status, 409);  // already ended

  auto group = create({{"type", "group"}, {"jobs", {step("c.g1", "wf-cancel2"), step("c.g2", "wf-cancel2")}}});
  ASSERT_EQ(api.call("DELETE", "/ojs/v1/workflows/" + group["id"].get<std::string>()).status, 200);
  const json cancelled = workflow(group["id"]);  // named: a range-for over a temporary's element reads freed memory
  ASSERT_EQ(cancelled["jobs"].size(), 2u) << cancelled.dump();
  for (const auto& j : cancelled["jobs"]) {
    EXPECT_EQ(j["state"], "cancelled");
    EXPECT_EQ(api.get("/ojs/v1/jobs/" + j["job_id"].get<std::string>()).body["job"]["state"], "cancelled");
  }
  EXPECT_TRUE(api.fetch({"wf-cancel2"}, "w").empty());
  EXPECT_EQ(api.get("/ojs/v1/workflows/019a0000-0000-7000-8000-000000000000").status, 404);
}

TEST_F(Workflows, InvalidWorkflowsAreRefusedNamingTheFieldAndNothingIsEnqueued) {
  auto field_of = [this](const json& body) {
    auto r = api.post("/ojs/v1/workflows", body);
    EXPECT_EQ(r.status, 400) << r.body.dump();
    return r.body["error"]["details"]["field"].get<std::string>();
  };
  EXPECT_EQ(field_of({{"type", "dag"}, {"steps", {step("x", "wf-bad")}}}), "type");
  EXPECT_EQ(field_of({{"type", "chain"}, {"steps", json::array()}}), "steps");
  EXPECT_EQ(field_of({{"type", "group"}, {"steps", {step("x", "wf-bad")}}}), "jobs");
  EXPECT_EQ(field_of({{"type", "chain"}, {"steps", {step("x", "wf-bad"), step("y", "wf-other")}}}), "steps[1].options.queue");
  EXPECT_EQ(field_of({{"type", "batch"}, {"jobs", {step("x", "wf-bad")}}}), "callbacks");
  EXPECT_EQ(field_of({{"type", "group"}, {"jobs", {{{"type", "group"}, {"jobs", {step("x", "wf-bad")}}}}}}), "jobs[0]");
  json untyped = step("x", "wf-bad");
  untyped.erase("type");
  EXPECT_EQ(field_of({{"type", "chain"}, {"steps", {step("x", "wf-bad"), untyped}}}), "steps[1].type");
  json bad_gpu = step("x", "wf-bad");
  bad_gpu["ext_ml_gpu_count"] = -2;
  EXPECT_EQ(field_of({{"type", "group"}, {"jobs", {bad_gpu}}}).rfind("jobs[0].ext_ml_gpu_count", 0), 0u);
  EXPECT_TRUE(api.fetch({"wf-bad"}, "w", 10).empty());
}

// examples/workflows/gpu-pipeline.json (the demo's): preprocess on CPU -> train on
// 8 GPUs -> evaluate on 1 GPU. Each step is matched as a PUSHed job would be: the CPU
// worker never gets the training step, the DGX gets 8 devices for it, then 1.
TEST_F(Workflows, TheGpuPipelineExampleKeepsEachStepsExtMlRequirements) {
  std::ifstream in(std::string(OJS_SOURCE_DIR) + "/examples/workflows/gpu-pipeline.json");
  auto wf = create(json::parse(in));
  ASSERT_EQ(wf["steps_total"], 3);
  const json cpu = {{"capabilities", example_worker("cpu-node")}};
  const json dgx = {{"capabilities", example_worker("dgx-h100")}};
  auto p = api.fetch({"training"}, "cpu-1", 1, cpu);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0]["type"], "ml.preprocess");
  ack(p[0], {{"tokens", "s3://datasets/tokens/"}});
  EXPECT_TRUE(api.fetch({"training"}, "cpu-1", 1, cpu).empty());  // 8 H100s needed
  auto t = api.fetch({"training"}, "dgx-1", 1, dgx);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0]["type"], "ml.train");
  EXPECT_EQ(t[0]["ext_ml_gpu_count"], 8);
  EXPECT_EQ(t[0]["ext_ml_assigned_devices"].size(), 8u);
  EXPECT_EQ(t[0]["parent_results"][0]["tokens"], "s3://datasets/tokens/");
  ack(t[0], {{"checkpoint", "s3://checkpoints/llama-8b-pipeline/final"}});
  auto e = api.fetch({"training"}, "dgx-1", 1, dgx);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0]["type"], "ml.evaluate");
  EXPECT_EQ(e[0]["ext_ml_assigned_devices"].size(), 1u);
  ack(e[0], {{"accuracy", 0.91}});
  wf = workflow(wf["id"]);
  EXPECT_EQ(wf["state"], "completed");
  EXPECT_EQ(wf["steps"][1]["name"], "train");
}

// A broker that stops after the script marked callbacks due and before it stored
// them leaves them in the queue's dispatch set: the maintenance loop of any broker
// enqueues them, once, under the ids fixed at creation.
TEST_F(Workflows, CallbacksLeftDueByAStoppedBrokerAreEnqueuedOnce) {
  auto wf = create({{"type", "batch"}, {"jobs", {step("d.a", "wf-due")}}, {"callbacks", {{"on_complete", step("d.cb", "wf-due-cb")}}}});
  const std::string id = wf["id"];
  const std::string cb_id = wf["callbacks"]["on_complete"]["job_id"];
  ack(fetch_one("wf-due"), "x");
  // Recreate the state between the two steps: the callback not stored, marked due.
  ASSERT_EQ(wait_for_state(api, cb_id, "available", 30000)["state"], "available");
  redis_cli(redis, {"DEL", "ojs:{wf-due-cb}:job:" + cb_id});
  const auto ready = redis_cli(redis, {"--scan", "--pattern", "ojs:{wf-due-cb}:ready:*"});
  ASSERT_FALSE(ready.empty());
  redis_cli(redis, {"ZREM", ready, cb_id});
  redis_cli(redis, {"HSET", "ojs:{wf-due}:workflow:" + id, "cbs:on_complete", "due"});
  EXPECT_EQ(api.get("/ojs/v1/jobs/" + cb_id).status, 404);
  redis_cli(redis, {"ZADD", "ojs:{wf-due}:workflow-dispatch", "1", id});  // the maintenance loop may act at once
  auto again = wait_for_state(api, cb_id, "available", 30000);
  EXPECT_EQ(again["state"], "available");
  EXPECT_EQ(again["parent_results"], json::array({"x"}));
  // Due again while stored (a broker stopped after the push): no second job.
  redis_cli(redis, {"HSET", "ojs:{wf-due}:workflow:" + id, "cbs:on_complete", "due"});
  redis_cli(redis, {"ZADD", "ojs:{wf-due}:workflow-dispatch", "1", id});
  for (int i = 0; i < 300 && redis_cli(redis, {"ZCARD", "ojs:{wf-due}:workflow-dispatch"}) != "0"; ++i) sleep_ms(100);
  EXPECT_EQ(redis_cli(redis, {"ZCARD", "ojs:{wf-due}:workflow-dispatch"}), "0");
  EXPECT_EQ(api.fetch({"wf-due-cb"}, "w", 10).size(), 1u);
}

// A held job of a cancelled workflow leaves the queue's on-hold set with it: the
// queue counts no pending job afterwards (its stats and its backpressure depth).
TEST_F(Workflows, CancellingAWorkflowReleasesItsHeldJobFromTheOnHoldSet) {
  auto group = create({{"type", "group"}, {"jobs", {step("h.g1", "wf-held"), step("h.g2", "wf-held")}}});
  const std::string held = group["jobs"][0]["job_id"];
  ASSERT_EQ(api.post("/ojs/v1/jobs/" + held + "/hold", json::object()).status, 200);
  EXPECT_EQ(api.get("/ojs/v1/queues/wf-held/stats").body["stats"]["pending"], 1);
  ASSERT_EQ(api.call("DELETE", "/ojs/v1/workflows/" + group["id"].get<std::string>()).status, 200);
  EXPECT_EQ(api.get("/ojs/v1/jobs/" + held).body["job"]["state"], "cancelled");
  EXPECT_EQ(api.get("/ojs/v1/queues/wf-held/stats").body["stats"]["pending"], 0);
  EXPECT_EQ(redis_cli(redis, {"ZCARD", "ojs:{wf-held}:on-hold"}), "0");
}
