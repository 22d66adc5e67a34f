// GET /metrics (Prometheus text format) and GET /ojs/v1/admin/overview against a
// real broker: queue depth by state and class, budget use, workers and GPUs,
// request counts and the FETCH latency histogram.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "ojs/client/http_client.hpp"
#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

json a100_caps() { return example_worker("4xa100-pcie"); }
json gpu_job(const std::string& queue, const json& attrs) { return ml_job(queue, attrs); }

bool has_line(const std::string& text, const std::string& line) {
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    if (l == line) return true;
  return false;
}

}  // namespace

TEST(Metrics, PrometheusTextReflectsQueuesWorkersBudgetsAndFetches) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  const std::string q = "metrics-q";
  api.push(gpu_job(q, {{"ext_ml_gpu_count", 2}}));
  const auto waiting = api.push(gpu_job(q, {{"ext_ml_gpu_memory_gb", 80}}));
  ASSERT_EQ(api.fetch({q}, "metrics-worker", 1, {{"capabilities", a100_caps()}}).size(), 1u);
  // Budget limit and preemption counter as the governance and preemption code keep them.
  auto cli = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"redis-cli", "-p", std::to_string(redis.port())});
    ASSERT_EQ(run_process(args).exit_code, 0);
  };
  cli({"HSET", "ojs:{" + q + "}:config", "max_total_gpus", "8"});
  cli({"HSET", "ojs:{" + q + "}:stats", "preempted", "3"});

  ojs::HttpClientOptions options;
  options.base_url = broker.url();
  ojs::HttpClient http(options);
  const auto r = http.get("/metrics");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.headers.at("content-type").rfind("text/plain; version=0.0.4", 0), 0u) << r.headers.at("content-type");
  const auto& m = r.body;
  for (const auto& line : {
           "ojs_queue_jobs{queue=\"metrics-q\",state=\"available\"} 1",
           "ojs_queue_jobs{queue=\"metrics-q\",state=\"active\"} 1",
           "ojs_queue_jobs{queue=\"metrics-q\",state=\"dead_letter\"} 0",
           "ojs_queue_gpus_in_use{queue=\"metrics-q\"} 2",
           "ojs_queue_gpu_jobs_running{queue=\"metrics-q\"} 1",
           "ojs_queue_gpu_budget{queue=\"metrics-q\",limit=\"max_total_gpus\"} 8",
           "ojs_preemptions_total{queue=\"metrics-q\"} 3",
           "ojs_workers{state=\"running\"} 1",
           "ojs_workers{state=\"lost\"} 0",
           "ojs_gpus_advertised 4",
           "ojs_gpus_in_use 2",
           "ojs_fetch_duration_seconds_count 1",
           "ojs_fetch_duration_seconds_bucket{le=\"+Inf\"} 1",
           "ojs_http_requests_total{method=\"POST\",route=\"/ojs/v1/jobs\",status=\"201\"} 2",
           "ojs_http_requests_total{method=\"POST\",route=\"/ojs/v1/workers/fetch\",status=\"200\"} 1",
           "ojs_redis_up 1",
           "# TYPE ojs_fetch_duration_seconds histogram",
       })
    EXPECT_TRUE(has_line(m, line)) << "missing: " << line << "\n" << m;
  // One waiting job in the class of the 80 GB job.
  const auto diag = api.get("/ojs/v1/jobs/" + waiting + "/diagnosis").body["diagnosis"];
  EXPECT_TRUE(has_line(m, "ojs_class_waiting{queue=\"metrics-q\",class=\"" + diag["class"].get<std::string>() + "\"} 1")) << m;
  // Every line is a comment or a well-formed sample.
  const std::regex sample(R"(^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*",?)*\})? [-+0-9.eEInfNa]+$)");
  std::istringstream in(m);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != '#') {
      EXPECT_TRUE(std::regex_match(line, sample)) << line;
    }
  }

  // Unknown paths are counted under one label, not one per path.
  http.get("/no/such/path");
  EXPECT_TRUE(has_line(http.get("/metrics").body, "ojs_http_requests_total{method=\"GET\",route=\"unmatched\",status=\"404\"} 1"));
}

TEST(Metrics, OverviewJsonListsWorkersQueuesAndWaitingReasons) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  api.push(gpu_job("ov-q", {{"ext_ml_gpu_count", 1}}));
  api.push(gpu_job("ov-q", {{"ext_ml_gpu_type", "nvidia-h100"}}));
  ASSERT_EQ(api.fetch({"ov-q"}, "ov-worker", 1, {{"capabilities", a100_caps()}}).size(), 1u);
  const auto r = api.get("/ojs/v1/admin/overview");
  ASSERT_EQ(r.status, 200);
  const auto& o = r.body;
  ASSERT_EQ(o["workers"].size(), 1u) << o.dump();
  EXPECT_EQ(o["workers"][0]["id"], "ov-worker");
  EXPECT_EQ(o["workers"][0]["gpus_total"], 4);
  EXPECT_EQ(o["workers"][0]["gpus_free"], 3);
  EXPECT_EQ(o["totals"]["workers_live"], 1);
  ASSERT_EQ(o["queues"].size(), 1u);
  const auto& q = o["queues"][0];
  EXPECT_EQ(q["counts"]["available"], 1);
  EXPECT_EQ(q["counts"]["active"], 1);
  bool explained = false;
  for (const auto& c : q["classes"])
    if (c["waiting"] == 1) explained = c["message"].get<std::string>().find("0/1 workers") != std::string::npos;
  EXPECT_TRUE(explained) << q.dump(2);
}
