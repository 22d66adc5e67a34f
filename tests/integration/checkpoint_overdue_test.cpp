// A running job that stopped checkpointing is named in its diagnosis and counted in
// /metrics (ojs_queue_checkpoints_overdue): preempted now, it would lose that work.
#include <gtest/gtest.h>

#include <chrono>

#include "ojs/client/http_client.hpp"
#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

TEST(CheckpointOverdue, ADiagnosisAndTheMetricNameAJobLateToCheckpoint) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  const std::string q = "ckpt-late";
  const auto id = api.push(ml_job(q, {{"ext_ml_checkpoint_enabled", true}, {"ext_ml_checkpoint_interval_s", 60}}));
  const auto plain = api.push(ml_job(q, json::object()));
  ASSERT_EQ(api.fetch({q}, "ckpt-w", 2).size(), 2u);

  auto why = api.get("/ojs/v1/jobs/" + id + "/diagnosis").body["diagnosis"];
  EXPECT_EQ(why["checkpoint"]["interval_s"], 60) << why.dump();
  EXPECT_EQ(why["checkpoint"]["overdue"], false) << why.dump();
  EXPECT_FALSE(api.get("/ojs/v1/jobs/" + plain + "/diagnosis").body["diagnosis"].contains("checkpoint"));

  // Started 3 minutes ago, no checkpoint since: over twice its interval.
  const auto started = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count() - 180'000;
  redis_lines(redis, {"HSET", "ojs:{" + q + "}:job:" + id, "started_at", std::to_string(started)});
  why = api.get("/ojs/v1/jobs/" + id + "/diagnosis").body["diagnosis"];
  EXPECT_EQ(why["checkpoint"]["overdue"], true) << why.dump();
  EXPECT_GE(why["checkpoint"]["overdue_by_s"].get<int>(), 59) << why.dump();
  EXPECT_NE(why["message"].get<std::string>().find("checkpoint is overdue"), std::string::npos) << why.dump();

  ojs::HttpClient client({broker.url(), ""});
  const auto metrics = client.get("/metrics").body;
  EXPECT_NE(metrics.find("ojs_queue_checkpoints_overdue{queue=\"" + q + "\"} 1"), std::string::npos) << metrics.substr(0, 2000);

  // A checkpoint committed now puts it back on time.
  ASSERT_EQ(api.post("/ojs/v1/jobs/" + id + "/checkpoint", {{"worker_id", "ckpt-w"}, {"step", 1}, {"storage_key", "file:///tmp/ckpt/1"}}).status, 200);
  EXPECT_EQ(api.get("/ojs/v1/jobs/" + id + "/diagnosis").body["diagnosis"]["checkpoint"]["overdue"], false);
  EXPECT_NE(client.get("/metrics").body.find("ojs_queue_checkpoints_overdue{queue=\"" + q + "\"} 0"), std::string::npos);
}
