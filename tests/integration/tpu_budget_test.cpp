// A queue budget of TPU chips end to end (a real broker and Redis): two 16-chip TPU
// jobs, two TPU workers and max_total_tpu_chips 16. One runs; the other waits, its
// diagnosis naming the limit, and runs once the first ACKs; every end gives the
// chips back, and the ledger agrees with the running jobs throughout.
#include <gtest/gtest.h>

#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

const std::string kQueue = "tpu-budget";

json tpu_job() {
  return {{"type", "ml.train"},
          {"args", json::array()},
          {"options", {{"queue", kQueue}}},
          {"ext_ml_tpu_type", "v5e"},
          {"ext_ml_tpu_chip_count", 16}};
}

const json kTpuWorker = {{"capabilities", {{"accelerator", "tpu"}, {"tpu", {{"type", "v5e"}, {"chip_count", 16}}}}}};

json budget(Api& api) { return api.get("/ojs/v1/admin/queues/" + kQueue + "/budget").body["budget"]; }

json reconciliation(Api& api) {
  const auto r = api.get("/ojs/v1/admin/queues/" + kQueue + "/reconcile");
  EXPECT_EQ(r.status, 200) << r.body.dump();
  return r.body["reconciliation"];
}

json job_of(Api& api, const std::string& id) { return api.get("/ojs/v1/jobs/" + id).body["job"]; }

}  // namespace

TEST(TpuBudget, SecondPodWaitsNamingTheLimitAndRunsOnceTheFirstAcks) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api(broker.url());
  const auto put = api.call("PUT", "/ojs/v1/admin/queues/" + kQueue + "/config", {{"budgets", {{"max_total_tpu_chips", 16}}}});
  ASSERT_EQ(put.status, 200) << put.body.dump();
  EXPECT_EQ(api.get("/ojs/v1/admin/queues/" + kQueue + "/config").body["config"]["budgets"], json({{"max_total_tpu_chips", 16}}));

  const auto first = api.push(tpu_job());
  const auto second = api.push(tpu_job());
  const auto on_one = api.fetch({kQueue}, "tpu-1", 1, kTpuWorker);
  ASSERT_EQ(on_one.size(), 1u);
  EXPECT_EQ(on_one[0]["id"], first);
  EXPECT_EQ(api.fetch({kQueue}, "tpu-2", 1, kTpuWorker).size(), 0u) << "an idle 16-chip worker, but the budget is spent";

  const auto waiting = job_of(api, second);
  EXPECT_EQ(waiting["state"], "available");
  EXPECT_NE(waiting["diagnosis"]["message"].get<std::string>().find("queue budget 16/16 TPU chips in use"), std::string::npos)
      << waiting["diagnosis"].dump();
  const auto why = api.get("/ojs/v1/jobs/" + second + "/diagnosis").body["diagnosis"];
  EXPECT_NE(why.dump().find("max_total_tpu_chips"), std::string::npos) << why.dump();
  auto b = budget(api);
  EXPECT_EQ(b["limits"]["max_total_tpu_chips"], 16) << b.dump();
  EXPECT_EQ(b["in_use"]["tpu_chips"], 16) << b.dump();
  EXPECT_EQ(b["in_use"]["gpus"], 0) << "TPU chips are not GPUs: " << b.dump();
  auto check = reconciliation(api);
  EXPECT_EQ(check["consistent"], true) << check.dump();
  EXPECT_EQ(check["active"]["tpu_chips"], 16) << check.dump();
  const auto cli = run_process({binary_path("ojsctl/ojsctl"), "--url", broker.url(), "queue", "budget", kQueue}, 30);
  EXPECT_EQ(cli.exit_code, 0) << cli.output;
  EXPECT_NE(cli.output.find("TPU chips: 16 in use / 16 max_total_tpu_chips"), std::string::npos) << cli.output;

  ASSERT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", first}, {"worker_id", "tpu-1"}}).status, 200);
  EXPECT_EQ(budget(api)["in_use"]["tpu_chips"], 0) << "ACK gives the chips back";
  const auto on_two = api.fetch({kQueue}, "tpu-2", 1, kTpuWorker);
  ASSERT_EQ(on_two.size(), 1u);
  EXPECT_EQ(on_two[0]["id"], second);
  EXPECT_EQ(budget(api)["in_use"]["tpu_chips"], 16);
  ASSERT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", second}, {"worker_id", "tpu-2"}}).status, 200);

  // A failed and a cancelled running pod give their chips back too.
  const auto third = api.push(tpu_job());
  ASSERT_EQ(api.fetch({kQueue}, "tpu-1", 1, kTpuWorker).size(), 1u);
  EXPECT_EQ(budget(api)["in_use"]["tpu_chips"], 16);
  const auto nack = api.post("/ojs/v1/workers/nack", {{"job_id", third}, {"worker_id", "tpu-1"},
                                                      {"error", {{"type", "Boom"}, {"message", "failed"}}}});
  ASSERT_EQ(nack.status, 200) << nack.body.dump();
  EXPECT_EQ(budget(api)["in_use"]["tpu_chips"], 0) << "NACK gives the chips back";
  api.push(tpu_job());
  const auto running = api.fetch({kQueue}, "tpu-2", 1, kTpuWorker);  // the new one, or the failed one's retry
  ASSERT_EQ(running.size(), 1u);
  EXPECT_EQ(budget(api)["in_use"]["tpu_chips"], 16);
  ASSERT_EQ(api.call("DELETE", "/ojs/v1/jobs/" + running[0]["id"].get<std::string>()).status, 200);

  b = budget(api);
  EXPECT_EQ(b["in_use"]["tpu_chips"], 0) << "every end gave its chips back: " << b.dump();
  check = reconciliation(api);
  EXPECT_EQ(check["consistent"], true) << check.dump();
  EXPECT_EQ(check["ledger"]["tpu_chips"], 0) << check.dump();
}
