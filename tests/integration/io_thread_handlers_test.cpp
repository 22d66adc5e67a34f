// FETCH, ACK, NACK, PUSH and heartbeat run as fibers on the I/O thread that read
// them (docs/architecture.md "Requests and Redis I/O"). Many requests then share one
// thread and one Redis connection: what each one knows of its caller must stay its own.
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "support/processes.hpp"
#include "support/role_tokens.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

json job(const std::string& queue) { return {{"type", "io.task"}, {"args", json::array()}, {"options", {{"queue", queue}}}}; }

// One I/O thread: every request below interleaves with the others on it.
struct OneIoThread : ::testing::Test {
  std::string dir = make_temp_dir("io-thread");
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--auth-file", write_role_tokens(dir), "--threads", "1"}};
};

TEST_F(OneIoThread, ConcurrentPushesFromTwoTenantsEachKeepTheirCallersTenant) {
  std::mutex mutex;
  std::vector<std::string> of_a, of_b, failures;
  std::vector<std::thread> clients;
  for (int c = 0; c < 16; ++c)
    clients.emplace_back([&, c] {
      const bool a = c % 2 == 0;
      Api api{broker.url(), a ? "team-a-token" : "team-b-token"};
      for (int i = 0; i < 25; ++i) {
        const auto r = api.post("/ojs/v1/jobs", job("iso-q"));
        std::lock_guard lock(mutex);
        if (r.status != 201) failures.push_back(std::to_string(r.status) + " " + r.body.dump());
        else (a ? of_a : of_b).push_back(r.body["job"]["id"].get<std::string>());
      }
    });
  for (auto& t : clients) t.join();
  ASSERT_TRUE(failures.empty()) << failures.size() << " failed, e.g. " << failures.front();
  ASSERT_EQ(of_a.size() + of_b.size(), 400u);
  // A tenant's producer sees its own jobs and no other's: each job was stored under its caller's tenant.
  Api team_a{broker.url(), "team-a-token"}, team_b{broker.url(), "team-b-token"};
  for (const auto& id : of_a) {
    EXPECT_EQ(team_a.get("/ojs/v1/jobs/" + id).status, 200) << id;
    EXPECT_EQ(team_b.get("/ojs/v1/jobs/" + id).status, 404) << id;
  }
  for (const auto& id : of_b) {
    EXPECT_EQ(team_b.get("/ojs/v1/jobs/" + id).status, 200) << id;
    EXPECT_EQ(team_a.get("/ojs/v1/jobs/" + id).status, 404) << id;
  }
}

TEST_F(OneIoThread, ConcurrentWorkersEachGetTheirOwnJobsAndAckThem) {
  Api producer{broker.url(), "team-a-token"};
  constexpr int kJobs = 200;
  for (int i = 0; i < kJobs; ++i) producer.push(job("run-q"));
  std::mutex mutex;
  std::vector<std::string> done, failures;
  std::vector<std::thread> workers;
  for (int w = 0; w < 8; ++w)
    workers.emplace_back([&, w] {
      Api api{broker.url(), "pool-token"};
      const std::string id = "pool-" + std::to_string(w);
      for (;;) {
        const auto jobs = api.fetch({"run-q"}, id);
        if (jobs.empty()) return;
        const auto job_id = jobs[0]["id"].get<std::string>();
        const auto ack = api.post("/ojs/v1/workers/ack", {{"job_id", job_id}, {"worker_id", id}});
        std::lock_guard lock(mutex);
        if (ack.status != 200) failures.push_back(std::to_string(ack.status) + " " + ack.body.dump());
        done.push_back(job_id);
      }
    });
  for (auto& t : workers) t.join();
  EXPECT_TRUE(failures.empty()) << failures.size() << " ACKs failed, e.g. " << failures.front();
  std::sort(done.begin(), done.end());
  EXPECT_EQ(std::unique(done.begin(), done.end()), done.end()) << "a job was handed out twice";
  EXPECT_EQ(done.size(), static_cast<std::size_t>(kJobs));
}

}  // namespace
