// Job logs: the real worker agent streams each job's stdout and stderr
// to the broker in chunks, the broker keeps the most recent bytes within its bound,
// and GET /ojs/v1/jobs/{id}/logs serves them (tail, since, and an SSE follow that
// ends with the job), tenant-scoped like INFO.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support/child_process.hpp"
#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"
#include "support/role_tokens.hpp"
#include "support/sse_client.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

constexpr int kLogBound = 64 * 1024;

std::vector<std::string> agent_args(const std::string& broker_url, const std::string& token, const std::string& work_dir) {
  return {binary_path("worker/worker"), "--broker", broker_url, "--worker-id", "pool-logs", "--queues", "logs",
          "--token", token, "--capabilities-file", std::string(OJS_SOURCE_DIR) + "/examples/workers/cpu-node.json",
          "--poll-interval-ms", "100", "--heartbeat-interval-s", "1", "--log-level", "warn", "--work-dir", work_dir,
          // 10 MB of output (no newline among the first 9.9 MB: one huge line), then a last line.
          "--command", "logs.flood=head -c 10000000 /dev/zero | tr '\\0' x; echo; echo THE-END",
          // Binary output on both streams, then waits for the test's go file.
          "--command", "logs.wait=printf 'started\\n\\377\\376\\000bin\\n'; printf 'err-line\\n' >&2; "
                       "while [ ! -f \"$GO_FILE\" ]; do sleep 0.05; done; echo done",
          "--command", "logs.quick=echo quick"};
}

std::string all_data(const json& logs) {
  std::string out;
  for (const auto& e : logs["entries"]) out += e["data"].get<std::string>();
  return out;
}

}  // namespace

class JobLogs : public ::testing::Test {
 protected:
  std::string dir = make_temp_dir("job_logs");
  RedisServer redis;
  BrokerProcess bounded{redis.url(), {"--auth-file", write_role_tokens(dir), "--job-log-max-bytes", std::to_string(kLogBound)}};
  Api producer{bounded.url(), "team-a-token"};
  Api other_tenant{bounded.url(), "team-b-token"};
  std::string go_file = make_temp_dir("logs-go") + "/go";
  ChildProcess agent{agent_args(bounded.url(), "pool-token", make_temp_dir("logs-agent")), {{"GO_FILE", go_file}}};
};

TEST_F(JobLogs, AFloodKeepsItsLastBytesWithinTheBound) {
  const auto id = producer.push({{"type", "logs.flood"}, {"args", json::array()}, {"options", {{"queue", "logs"}}}});
  ASSERT_EQ(wait_for_state(producer, id, "completed", 120000)["state"], "completed");

  auto r = producer.get("/ojs/v1/jobs/" + id + "/logs");
  ASSERT_EQ(r.status, 200) << r.body.dump().substr(0, 500);
  const auto text = all_data(r.body);
  EXPECT_LE(text.size(), static_cast<std::size_t>(kLogBound));
  EXPECT_GE(text.size(), static_cast<std::size_t>(kLogBound / 2));  // the bound is used, not a token tail
  ASSERT_GE(text.size(), 9u);
  EXPECT_EQ(text.substr(text.size() - 9), "\nTHE-END\n");
  EXPECT_GT(r.body["dropped_bytes"].get<long long>(), 9'000'000);
  EXPECT_EQ(r.body["state"], "completed");

  // tail=N: the last N lines.
  auto tail = producer.get("/ojs/v1/jobs/" + id + "/logs?tail=1");
  ASSERT_EQ(tail.status, 200);
  EXPECT_EQ(all_data(tail.body), "THE-END\n");
  // Another tenant's producer sees no such job, as with INFO.
  EXPECT_EQ(other_tenant.get("/ojs/v1/jobs/" + id + "/logs").status, 404);
  // Bad parameters name themselves.
  auto bad = producer.get("/ojs/v1/jobs/" + id + "/logs?tail=-1");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.body["error"]["details"]["field"], "tail");
}

TEST_F(JobLogs, FollowStreamsUntilTheJobEnds) {
  const auto id = producer.push({{"type", "logs.wait"}, {"args", json::array()}, {"options", {{"queue", "logs"}}}});
  // The first lines, of both streams, arrive while the job still runs.
  Api::Reply running{0, nullptr};
  const auto both_streams = [&] {
    running = producer.get("/ojs/v1/jobs/" + id + "/logs");
    bool out = false, err = false;
    for (const auto& e : running.body["entries"]) {
      out = out || (e["stream"] == "stdout" && e["data"].get<std::string>().find("started") != std::string::npos);
      err = err || (e["stream"] == "stderr" && e["data"] == "err-line\n");
    }
    return out && err;
  };
  ASSERT_TRUE(wait_until(both_streams)) << running.body.dump();
  EXPECT_EQ(running.body["state"], "active");
  // Bytes that are not UTF-8 arrive as U+FFFD, the rest as written.
  EXPECT_NE(all_data(running.body).find("\xEF\xBF\xBD\xEF\xBF\xBD"), std::string::npos) << running.body.dump();

  // since: only what follows a cursor.
  const auto cursor = running.body["next"].get<std::string>();

  SseClient follow(bounded.port(), "/ojs/v1/jobs/" + id + "/logs?follow=true", {"Authorization: Bearer team-a-token"});
  ASSERT_EQ(follow.status(), 200) << follow.error_body();
  std::ofstream(go_file) << "go\n";
  std::string streamed;
  std::optional<SseEvent> last;
  while (auto e = follow.next(std::chrono::seconds(30))) {
    if (e->event == "log") streamed += json::parse(e->data)["data"].get<std::string>();
    last = e;
  }
  EXPECT_TRUE(follow.ended_cleanly()) << producer.get("/ojs/v1/jobs/" + id).body.dump() << "\n" << producer.get("/ojs/v1/jobs/" + id + "/logs").body.dump();
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->event, "end");
  EXPECT_EQ(json::parse(last->data)["state"], "completed");
  EXPECT_NE(streamed.find("started"), std::string::npos);
  EXPECT_NE(streamed.find("done\n"), std::string::npos);

  auto after = producer.get("/ojs/v1/jobs/" + id + "/logs?since=" + cursor);
  ASSERT_EQ(after.status, 200);
  EXPECT_EQ(all_data(after.body), "done\n");

  // A finished job's follow sends what is kept and ends at once.
  SseClient done(bounded.port(), "/ojs/v1/jobs/" + id + "/logs?follow=true", {"Authorization: Bearer team-a-token"});
  ASSERT_EQ(done.status(), 200);
  std::optional<SseEvent> final_event;
  while (auto e = done.next(std::chrono::seconds(30))) final_event = e;
  ASSERT_TRUE(final_event.has_value());
  EXPECT_EQ(final_event->event, "end");
}

TEST_F(JobLogs, OnlyTheHoldingWorkerWritesAJobsLog) {
  const auto id = producer.push({{"type", "logs.quick"}, {"args", json::array()}, {"options", {{"queue", "logs"}}}});
  ASSERT_EQ(wait_for_state(producer, id, "completed")["state"], "completed");
  Api pool{bounded.url(), "pool-token"};
  auto r = pool.post("/ojs/v1/workers/logs", {{"worker_id", "pool-other"}, {"job_id", id},
                                              {"chunks", {{{"stream", "stdout"}, {"data", "forged"}}}}});
  EXPECT_EQ(r.status, 409) << r.body.dump();
  r = pool.post("/ojs/v1/workers/logs", {{"worker_id", "pool-logs"}, {"job_id", id}, {"chunks", {{{"stream", "tty"}, {"data", "x"}}}}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body["error"]["details"]["field"], "chunks[0].stream");
  // A producer may not write logs at all.
  EXPECT_EQ(producer.post("/ojs/v1/workers/logs", {{"worker_id", "pool-logs"}, {"job_id", id}, {"chunks", json::array()}}).status, 403);
  EXPECT_EQ(all_data(producer.get("/ojs/v1/jobs/" + id + "/logs").body), "quick\n");
}
