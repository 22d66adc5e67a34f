// Backfill (EASY, docs/matching.md#backfill) end to end: a real redis-server and
// broker; one 8-GPU worker simulated by HTTP FETCH with capabilities.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;
using namespace std::chrono_literals;

namespace {

json gpu_worker(int gpus) {
  return {{"capabilities", {{"accelerator", "gpu"}, {"gpu", {{"type", "nvidia-a100"}, {"count", gpus}, {"memory_gb", 80}}}}}};
}

json gpu_job(const std::string& queue, int gpus, std::optional<int> estimate_s) {
  json attrs = {{"ext_ml_gpu_count", gpus}};
  if (estimate_s) attrs["ext_ml_estimated_duration_seconds"] = *estimate_s;
  return ml_job(queue, attrs);
}

}  // namespace

class Backfill : public ::testing::Test {
 protected:
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--preemption-interval-ms", "100"}};
  Api api{broker.url()};
  const json dgx = gpu_worker(8);

  void put_config(const std::string& queue, const json& body) {
    auto r = api.call("PUT", "/ojs/v1/admin/queues/" + queue + "/config", body);
    ASSERT_EQ(r.status, 200) << r.body.dump();
  }
  std::vector<std::string> fetch(const std::string& queue) {
    std::vector<std::string> ids;
    for (const auto& j : api.fetch({queue}, "dgx", 1, dgx)) ids.push_back(j["id"].get<std::string>());
    return ids;
  }
  void ack(const std::string& id) {
    EXPECT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "dgx"}}).status, 200);
  }
  json why(const std::string& id) { return api.get("/ojs/v1/jobs/" + id + "/diagnosis").body; }
};

TEST_F(Backfill, BigJobGetsItsReservedWorkerWhileShortJobsBackfillAndOthersWait) {
  const std::string q = "bf-easy";
  put_config(q, {{"backfill", {{"after_s", 0}}}});
  EXPECT_EQ(api.get("/ojs/v1/admin/queues/" + q + "/config").body["config"]["backfill"]["after_s"], 0);

  // Four 2-GPU jobs declared to run 60 s fill the worker.
  std::vector<std::string> running;
  for (int i = 0; i < 4; ++i) running.push_back(api.push(gpu_job(q, 2, 60)));
  for (int i = 0; i < 4; ++i) ASSERT_EQ(fetch(q).size(), 1u);

  // The 8-GPU job fits nowhere; small jobs without an estimate queue behind it.
  const auto big = api.push(gpu_job(q, 8, 600));
  const auto no_estimate = api.push(gpu_job(q, 2, std::nullopt));
  json reservation;
  for (auto until = std::chrono::steady_clock::now() + 20s; std::chrono::steady_clock::now() < until;) {
    reservation = why(big)["diagnosis"]["backfill_reservation"];
    if (reservation.is_object()) break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(reservation.is_object()) << "no backfill reservation for the 8-GPU job: " << why(big).dump();
  EXPECT_EQ(reservation["worker_id"], "dgx");
  EXPECT_EQ(reservation["gpus"], 8);

  // Two GPUs free up: the job without an estimate may not take them.
  ack(running[0]);
  EXPECT_TRUE(fetch(q).empty()) << "a job without ext_ml_estimated_duration_seconds ran on GPUs held for the 8-GPU job";
  auto d = why(no_estimate)["diagnosis"];
  ASSERT_TRUE(d["by_predicate"].contains("backfill")) << d.dump();
  EXPECT_NE(d["by_predicate"]["backfill"]["sample_reason"].get<std::string>().find("declares none"), std::string::npos) << d.dump();

  // Nor a job declared to run past the reservation's start (another class: 1 GPU).
  const auto too_long = api.push(gpu_job(q, 1, 3600));
  EXPECT_TRUE(fetch(q).empty());
  d = why(too_long)["diagnosis"];
  ASSERT_TRUE(d["by_predicate"].contains("backfill")) << d.dump();
  EXPECT_NE(d["by_predicate"]["backfill"]["sample_reason"].get<std::string>().find("declares 3600 s"), std::string::npos) << d.dump();

  // A job declared to end before the start backfills the held GPUs, though it
  // is younger than the job without an estimate in the same class.
  const auto short_job = api.push(gpu_job(q, 2, 2));
  EXPECT_EQ(fetch(q), std::vector<std::string>{short_job});
  ack(short_job);

  // Small jobs keep arriving; when the running jobs end the worker gets the big job.
  for (std::size_t i = 1; i < running.size(); ++i) {
    api.push(gpu_job(q, 2, std::nullopt));
    ack(running[i]);
    if (i + 1 < running.size()) EXPECT_TRUE(fetch(q).empty()) << "after ack " << i;
  }
  EXPECT_EQ(fetch(q), std::vector<std::string>{big});
  EXPECT_FALSE(why(big)["diagnosis"].contains("backfill_reservation"));
  // With the big job running, the reservation is over: the waiting jobs are free to use what is left.
  ack(big);
  EXPECT_EQ(fetch(q), std::vector<std::string>{no_estimate});
}

TEST_F(Backfill, ReservationEndsWhenItsJobIsCancelled) {
  const std::string q = "bf-cancel";
  put_config(q, {{"backfill", {{"after_s", 0}}}});
  const auto running = api.push(gpu_job(q, 6, 60));
  ASSERT_EQ(fetch(q).size(), 1u);
  const auto big = api.push(gpu_job(q, 8, std::nullopt));
  const auto small = api.push(gpu_job(q, 2, std::nullopt));
  json reservation;
  for (auto until = std::chrono::steady_clock::now() + 20s; std::chrono::steady_clock::now() < until;) {
    reservation = why(big)["diagnosis"]["backfill_reservation"];
    if (reservation.is_object()) break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(reservation.is_object()) << why(big).dump();
  EXPECT_TRUE(fetch(q).empty()) << "the 2 free GPUs are held for the 8-GPU job";
  ASSERT_EQ(api.call("DELETE", "/ojs/v1/jobs/" + big).status, 200);
  EXPECT_EQ(fetch(q), std::vector<std::string>{small});
  ack(small);
  ack(running);
}

TEST_F(Backfill, QueueConfigRejectsBadSettings) {
  auto r = api.call("PUT", "/ojs/v1/admin/queues/bf-bad/config", {{"backfill", {{"after_s", -1}}}});
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.dump().find("backfill.after_s"), std::string::npos) << r.body.dump();
  r = api.call("PUT", "/ojs/v1/admin/queues/bf-bad/config", {{"backfill", {{"start", 1}}}});
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.dump().find("backfill.start"), std::string::npos) << r.body.dump();
  r = api.call("PUT", "/ojs/v1/admin/queues/bf-bad/config", {{"backfill", "yes"}});
  EXPECT_EQ(r.status, 400);
  r = api.call("PUT", "/ojs/v1/admin/queues/bf-bad/config", {{"backfill", true}});
  EXPECT_EQ(r.status, 200) << r.body.dump();
  EXPECT_EQ(r.body["config"]["backfill"]["after_s"], 60);
}
