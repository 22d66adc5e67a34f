// What one read of a job's log may cost: a page holds at most 1,000 entries and about
// 1 MiB, tail=N looks back a bounded way and pages on with since=next, follow honours
// tail, and out-of-range cursors and skipped_bytes answer 400 naming the field.
// Real redis-server and broker; the worker's chunks are posted as the agent posts them.
#include <gtest/gtest.h>

#include "support/processes.hpp"
#include "support/sse_client.hpp"

using nlohmann::json;
using namespace ojs::test;

class JobLogLimits : public ::testing::Test {
 protected:
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--job-log-max-bytes", std::to_string(4 << 20)}};
  Api api{broker.url()};

  // A job held by worker w1, ready for its log.
  std::string running_job() {
    const auto id = api.push({{"type", "logs.t"}, {"args", json::array()}, {"options", {{"queue", "loglim"}}}});
    const auto jobs = api.fetch({"loglim"}, "w1");
    EXPECT_EQ(jobs.size(), 1u);
    return id;
  }
  void write(const std::string& id, const std::vector<std::string>& chunks) {
    for (std::size_t at = 0; at < chunks.size(); at += 256) {
      json body = {{"worker_id", "w1"}, {"job_id", id}, {"chunks", json::array()}};
      for (std::size_t i = at; i < chunks.size() && i < at + 256; ++i) body["chunks"].push_back({{"stream", "stdout"}, {"data", chunks[i]}});
      const auto r = api.post("/ojs/v1/workers/logs", body);
      ASSERT_EQ(r.status, 200) << r.body.dump();
    }
  }
  std::string logs(const std::string& id, const std::string& query, json* body = nullptr) {
    const auto r = api.get("/ojs/v1/jobs/" + id + "/logs" + query);
    EXPECT_EQ(r.status, 200) << r.body.dump().substr(0, 300);
    std::string text;
    for (const auto& e : r.body["entries"]) text += e["data"].get<std::string>();
    if (body) *body = r.body;
    return text;
  }
};

TEST_F(JobLogLimits, TailOfOneLongLineIsPagedAndBounded) {
  const auto id = running_job();
  // Output without newlines (a progress bar): 12,000 one-byte chunks, one line.
  write(id, std::vector<std::string>(12000, "x"));
  json page;
  logs(id, "?tail=1", &page);
  EXPECT_LE(page["entries"].size(), 1000u);
  EXPECT_EQ(page["more"], true);
  EXPECT_EQ(page["truncated"], true);  // the line began before the look back's bound
  // Paging on from the tail reaches the log's end, each page within the cap.
  std::size_t total = page["entries"].size();
  for (int pages = 0; page["more"] == true && pages < 20; ++pages) {
    logs(id, "?since=" + page["next"].get<std::string>(), &page);
    EXPECT_LE(page["entries"].size(), 1000u);
    total += page["entries"].size();
  }
  EXPECT_EQ(page["more"], false);
  EXPECT_EQ(total, 10000u);
}

TEST_F(JobLogLimits, APageIsBoundedByBytes) {
  const auto id = running_job();
  write(id, {std::string(700 * 1024, 'a'), std::string(700 * 1024, 'b'), std::string(700 * 1024, 'c') + "\n"});
  json page;
  const auto first = logs(id, "", &page);
  EXPECT_EQ(page["entries"].size(), 1u);
  EXPECT_EQ(page["more"], true);
  EXPECT_EQ(first, std::string(700 * 1024, 'a'));
  const auto second = logs(id, "?since=" + page["next"].get<std::string>(), &page);
  EXPECT_EQ(second, std::string(700 * 1024, 'b'));
  // A tail pages the same way.
  logs(id, "?tail=1", &page);
  EXPECT_EQ(page["entries"].size(), 1u);
  EXPECT_EQ(page["more"], true);
  EXPECT_EQ(page["truncated"], false);
}

TEST_F(JobLogLimits, TailStartsAtALineAndFollowHonoursIt) {
  const auto id = running_job();
  write(id, {"first\n", "second\n", "third\n"});
  json page;
  EXPECT_EQ(logs(id, "?tail=1", &page), "third\n");
  ASSERT_EQ(page["entries"].size(), 1u);  // no empty entry before the line
  EXPECT_EQ(logs(id, "?tail=2", &page), "second\nthird\n");
  EXPECT_EQ(page["entries"].size(), 2u);
  ASSERT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "w1"}}).status, 200);

  SseClient follow(broker.port(), "/ojs/v1/jobs/" + id + "/logs?follow=true&tail=1");
  ASSERT_EQ(follow.status(), 200) << follow.error_body();
  std::string streamed;
  std::optional<SseEvent> last;
  while (auto e = follow.next(std::chrono::seconds(30))) {
    if (e->event == "log") streamed += json::parse(e->data)["data"].get<std::string>();
    last = e;
  }
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->event, "end");
  EXPECT_EQ(streamed, "third\n");
}

TEST_F(JobLogLimits, CursorsTimesAndCountsOutOfRange) {
  const auto id = running_job();
  write(id, {"early\n"});
  // A time at or before 1970 reads from the first entry, with a usable next.
  json page;
  EXPECT_EQ(logs(id, "?since=1970-01-01T00:00:00Z", &page), "early\n");
  EXPECT_EQ(logs(id, "?since=" + page["next"].get<std::string>()), "");
  // A cursor beyond what stream ids hold is refused, naming since.
  for (const std::string bad : {"99999999999999999999999-1", "1-99999999999999999999", "18446744073709551615-18446744073709551615"}) {
    const auto r = api.get("/ojs/v1/jobs/" + id + "/logs?since=" + bad);
    EXPECT_EQ(r.status, 400) << bad << " " << r.body.dump();
    EXPECT_EQ(r.body["error"]["details"]["field"], "since");
  }
  // skipped_bytes within what the count holds.
  const auto r = api.post("/ojs/v1/workers/logs", {{"worker_id", "w1"}, {"job_id", id}, {"skipped_bytes", 9223372036854775807LL},
                                                   {"chunks", json::array()}});
  EXPECT_EQ(r.status, 400) << r.body.dump();
  EXPECT_EQ(r.body["error"]["details"]["field"], "skipped_bytes");
  logs(id, "", &page);
  EXPECT_GE(page["dropped_bytes"].get<long long>(), 0);
}
