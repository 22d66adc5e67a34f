// GET /ojs/v1/events/stream (server-sent events, spec/ojs-realtime.md): a raw
// HTTP client over loopback receives the events of PUSH/FETCH/ACK in order, the
// filters hold, Last-Event-ID resumes without a gap, a tenant-pinned token sees
// only its tenant, the stream ends cleanly on SIGTERM, and open streams hold no
// handler thread (/health answers with more open streams than handler threads).
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <set>
#include <thread>

#include "support/processes.hpp"
#include "support/sse_client.hpp"

using nlohmann::json;
using namespace ojs::test;
using namespace std::chrono_literals;

namespace {

json job(const std::string& queue, const std::string& type = "sse.task") {
  return {{"type", type}, {"args", json::array()}, {"options", {{"queue", queue}}}};
}

// The next event, parsed; fails the test when none comes.
json next_event(SseClient& sse, std::string* sse_id = nullptr) {
  auto ev = sse.next(20s);
  EXPECT_TRUE(ev.has_value()) << "no event came";
  if (!ev) return json();
  if (sse_id) *sse_id = ev->id;
  auto body = json::parse(ev->data);
  EXPECT_EQ(body["type"], ev->event);
  return body;
}

// Events of one job until `last` (its type) arrives.
std::vector<std::string> types_until(SseClient& sse, const std::string& last) {
  std::vector<std::string> seen;
  while (seen.empty() || seen.back() != last) {
    auto ev = next_event(sse);
    if (ev.is_null()) break;
    seen.push_back(ev["type"]);
  }
  return seen;
}

void run_one(Api& api, const std::string& queue, const std::string& worker) {
  auto jobs = api.fetch({queue}, worker);
  ASSERT_EQ(jobs.size(), 1u);
  ASSERT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", jobs[0]["id"]}, {"worker_id", worker}}).status, 200);
}

std::string sha256_of(const std::string& token) {
  return run_process({"sh", "-c", "printf %s '" + token + "' | sha256sum"}, 10).output.substr(0, 64);
}

}  // namespace

class EventStream : public ::testing::Test {
 protected:
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--event-stream-keepalive-ms", "300"}};
  Api api{broker.url()};
};

TEST_F(EventStream, DeliversPushFetchAckInOrder) {
  SseClient sse(broker.port(), "/ojs/v1/events/stream?queues=sse-a");
  ASSERT_EQ(sse.status(), 200);
  EXPECT_EQ(sse.header("content-type"), "text/event-stream");
  EXPECT_EQ(sse.header("cache-control"), "no-cache");
  const auto id = api.push(job("sse-a"));
  run_one(api, "sse-a", "w1");
  std::vector<std::string> ids(3);
  auto enqueued = next_event(sse, &ids[0]);
  auto started = next_event(sse, &ids[1]);
  auto completed = next_event(sse, &ids[2]);
  EXPECT_EQ(enqueued["type"], "job.enqueued");
  EXPECT_EQ(started["type"], "job.started");
  EXPECT_EQ(completed["type"], "job.completed");
  for (const auto& e : {enqueued, started, completed}) {
    EXPECT_EQ(e["subject"], id);
    EXPECT_EQ(e["data"]["queue"], "sse-a");
    EXPECT_EQ(e["data"]["job_type"], "sse.task");
  }
  EXPECT_EQ(started["data"]["worker_id"], "w1");
  // Ids name the position: "<stream id>@<queue>", increasing.
  for (const auto& i : ids) EXPECT_NE(i.find("@sse-a"), std::string::npos) << i;
  EXPECT_LT(std::stoll(ids[0]), std::stoll(ids[2]) + 1);
}

TEST_F(EventStream, SendsHeartbeatCommentsWhileIdle) {
  SseClient sse(broker.port(), "/ojs/v1/events/stream");
  ASSERT_EQ(sse.status(), 200);
  EXPECT_FALSE(sse.next(1500ms).has_value());  // nothing happens...
  EXPECT_GE(sse.comments(), 2);                // ...but the connection is kept warm
  EXPECT_FALSE(sse.ended());
}

TEST_F(EventStream, FiltersByQueueEventTypeJobTypeAndJob) {
  SseClient completed_in_a(broker.port(), "/ojs/v1/events/stream?queues=f-a&types=job.completed");
  SseClient reports(broker.port(), "/ojs/v1/events/stream?job_types=report.build");
  ASSERT_EQ(completed_in_a.status(), 200);
  ASSERT_EQ(reports.status(), 200);
  api.push(job("f-b"));
  run_one(api, "f-b", "w");
  const auto a = api.push(job("f-a"));
  run_one(api, "f-a", "w");
  const auto report = api.push(job("f-b", "report.build"));
  SseClient one_job(broker.port(), "/ojs/v1/events/stream?job_id=" + report);
  ASSERT_EQ(one_job.status(), 200);
  run_one(api, "f-b", "w");

  auto ev = next_event(completed_in_a);
  EXPECT_EQ(ev["type"], "job.completed");
  EXPECT_EQ(ev["subject"], a);
  EXPECT_FALSE(completed_in_a.next(1s).has_value()) << "only f-a's job.completed";

  EXPECT_EQ(types_until(reports, "job.completed"), (std::vector<std::string>{"job.enqueued", "job.started", "job.completed"}));
  EXPECT_FALSE(reports.next(1s).has_value());
  // Subscribed after its PUSH (a stream starts where the broker's reader is, up
  // to one poll before the request): this job's events only, up to its end.
  json mine;
  do {
    mine = next_event(one_job);
    EXPECT_EQ(mine["subject"], report);
  } while (!mine.is_null() && mine["type"] != "job.completed");
  EXPECT_FALSE(one_job.next(1s).has_value());
}

TEST_F(EventStream, LastEventIdResumesWithoutGapsOrRepeats) {
  std::vector<std::string> first_ids;
  std::string resume_from;
  {
    SseClient sse(broker.port(), "/ojs/v1/events/stream?types=job.enqueued");
    ASSERT_EQ(sse.status(), 200);
    // Two queues: the resume position crosses streams.
    for (int i = 0; i < 3; ++i) {
      api.push(job("r-a"));
      api.push(job("r-b"));
    }
    for (int i = 0; i < 6; ++i) {
      std::string id;
      next_event(sse, &id);
      first_ids.push_back(id);
    }
    resume_from = first_ids[1];
  }  // disconnected
  // More events while away.
  std::vector<std::string> later;
  for (int i = 0; i < 3; ++i) later.push_back(api.push(job(i % 2 ? "r-a" : "r-b")));
  SseClient again(broker.port(), "/ojs/v1/events/stream?types=job.enqueued", {"Last-Event-ID: " + resume_from});
  ASSERT_EQ(again.status(), 200);
  std::vector<std::string> replayed;
  for (int i = 0; i < 7; ++i) {
    std::string id;
    auto ev = next_event(again, &id);
    if (ev.is_null()) break;
    replayed.push_back(id);
  }
  // Exactly what followed the position, in the same order, then the new ones.
  ASSERT_EQ(replayed.size(), 7u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(replayed[i], first_ids[i + 2]);
  EXPECT_FALSE(again.next(1s).has_value()) << "no repeats";
  // Live events still follow.
  const auto live = api.push(job("r-a"));
  EXPECT_EQ(next_event(again)["subject"], live);
}

TEST_F(EventStream, StreamsBeyondTheBoundAreRefusedWith503) {
  BrokerProcess small{redis.url(), {"--max-event-streams", "2"}};
  SseClient a(small.port(), "/ojs/v1/events/stream");
  SseClient b(small.port(), "/ojs/v1/events/stream");
  ASSERT_EQ(a.status(), 200);
  ASSERT_EQ(b.status(), 200);
  SseClient c(small.port(), "/ojs/v1/events/stream");
  EXPECT_EQ(c.status(), 503);
  EXPECT_FALSE(c.header("retry-after").empty());
  EXPECT_NE(c.error_body().find("--max-event-streams"), std::string::npos);
  // A closed stream frees its place.
  a.close();
  bool admitted = false;
  for (int i = 0; i < 100 && !admitted; ++i) {
    SseClient d(small.port(), "/ojs/v1/events/stream");
    admitted = d.status() == 200;
    if (!admitted) std::this_thread::sleep_for(100ms);
  }
  EXPECT_TRUE(admitted);
}

TEST_F(EventStream, EndsCleanlyOnSigterm) {
  SseClient sse(broker.port(), "/ojs/v1/events/stream");
  ASSERT_EQ(sse.status(), 200);
  api.push(job("t-a"));
  EXPECT_EQ(next_event(sse)["type"], "job.enqueued");
  broker.stop();  // SIGTERM, waits for the exit (SIGKILL after 5 s would cut the stream: no last chunk)
  auto ev = sse.next(10s);
  ASSERT_TRUE(ev.has_value());
  EXPECT_EQ(ev->event, "server.shutdown");
  EXPECT_TRUE(sse.wait_end(10s));
  EXPECT_TRUE(sse.ended_cleanly()) << "the chunked body ends with its last chunk";
}

TEST_F(EventStream, HealthStaysPromptWithManyOpenStreams) {
  // More open streams than handler threads (4): none holds one.
  BrokerProcess few{redis.url(), {"--handler-threads", "4"}};
  std::vector<std::unique_ptr<SseClient>> streams;
  for (int i = 0; i < 40; ++i) {
    streams.push_back(std::make_unique<SseClient>(few.port(), "/ojs/v1/events/stream?queues=h-q"));
    ASSERT_EQ(streams.back()->status(), 200) << "stream " << i;
  }
  Api api_few{few.url()};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(api_few.get("/ojs/v1/health").status, 200);
  const auto id = api_few.push(job("h-q"));
  for (auto& s : streams) EXPECT_EQ(next_event(*s)["subject"], id);
}

TEST_F(EventStream, PerJobStreamEndsAfterTheTerminalEvent) {
  const auto id = api.push(job("j-q"));
  SseClient sse(broker.port(), "/ojs/v1/jobs/" + id + "/events");
  ASSERT_EQ(sse.status(), 200);
  run_one(api, "j-q", "w");
  EXPECT_EQ(next_event(sse)["type"], "job.started");
  EXPECT_EQ(next_event(sse)["type"], "job.completed");
  EXPECT_TRUE(sse.wait_end(10s));
  EXPECT_TRUE(sse.ended_cleanly());
  // A finished job: its state once, then the end.
  SseClient done(broker.port(), "/ojs/v1/jobs/" + id + "/events");
  auto ev = done.next(10s);
  ASSERT_TRUE(ev.has_value());
  EXPECT_EQ(ev->event, "job.state_changed");
  EXPECT_EQ(json::parse(ev->data)["to"], "completed");
  EXPECT_TRUE(done.wait_end(10s));
  SseClient unknown(broker.port(), "/ojs/v1/jobs/019a0000-0000-7000-8000-000000000000/events");
  EXPECT_EQ(unknown.status(), 404);
}

TEST_F(EventStream, PerQueueStream) {
  SseClient none(broker.port(), "/ojs/v1/queues/no-such-queue/events");
  EXPECT_EQ(none.status(), 404);
  api.push(job("pq-a"));
  SseClient sse(broker.port(), "/ojs/v1/queues/pq-a/events?event_types=job.enqueued");
  ASSERT_EQ(sse.status(), 200);
  api.push(job("pq-b"));
  const auto mine = api.push(job("pq-a"));
  EXPECT_EQ(next_event(sse)["subject"], mine);
  EXPECT_FALSE(sse.next(1s).has_value());
}

// A stream starts at the streams' last ids when it is established: an event
// written before the subscription is never delivered, even while the reader's
// position lags behind (another stream open, a slow poll cadence) or the event
// shares the subscription's millisecond. Another open stream keeps the reader
// going; its first event proves a poll happened after it joined, and the next
// poll is a cadence away, so on a lagging start PUSH `before` would come first.
TEST(EventStreamStart, AStreamOpenedAfterAPushDoesNotDeliverIt) {
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--event-stream-poll-ms", "2000"}};
  Api api{broker.url()};
  SseClient other(broker.port(), "/ojs/v1/events/stream?event_types=job.enqueued");
  ASSERT_EQ(other.status(), 200);
  const auto warmup = api.push(job("start-q"));
  EXPECT_EQ(next_event(other)["subject"], warmup);
  const auto before = api.push(job("start-q"));
  SseClient sse(broker.port(), "/ojs/v1/queues/start-q/events?event_types=job.enqueued");
  ASSERT_EQ(sse.status(), 200);
  const auto after = api.push(job("start-q"));
  EXPECT_EQ(next_event(sse)["subject"], after) << "the PUSH before the stream opened is not in it (" << before << ")";
  EXPECT_FALSE(sse.next(1s).has_value());
}

class EventStreamTenants : public ::testing::Test {
 protected:
  std::string dir = make_temp_dir("sse-tenants");
  std::string tokens = [this] {
    const json entries = json::array({
        {{"name", "team-a"}, {"roles", {"producer"}}, {"tenant", "team-a"}, {"sha256", sha256_of("team-a-token")}},
        {{"name", "team-b"}, {"roles", {"producer"}}, {"tenant", "team-b"}, {"sha256", sha256_of("team-b-token")}},
        {{"name", "ops"}, {"roles", {"admin"}}, {"sha256", sha256_of("admin-token")}},
    });
    std::ofstream(dir + "/tokens.json") << entries.dump();
    return dir + "/tokens.json";
  }();
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--auth-file", tokens}};
  Api team_a{broker.url(), "team-a-token"};
  Api team_b{broker.url(), "team-b-token"};
};

TEST_F(EventStreamTenants, APinnedTokenSeesOnlyItsTenant) {
  SseClient anonymous(broker.port(), "/ojs/v1/events/stream");
  EXPECT_EQ(anonymous.status(), 401);
  SseClient a(broker.port(), "/ojs/v1/events/stream", {"Authorization: Bearer team-a-token"});
  ASSERT_EQ(a.status(), 200);
  team_b.push(job("shared"));
  const auto mine = team_a.push(job("shared"));
  team_b.push(job("shared"));
  auto ev = next_event(a);
  EXPECT_EQ(ev["subject"], mine);
  EXPECT_FALSE(a.next(1s).has_value()) << "team-b's events stay invisible";
}

TEST_F(EventStreamTenants, PollingAppliesTheTenantBeforeTheLimit) {
  std::set<std::string> mine;
  for (int i = 0; i < 3; ++i) mine.insert(team_a.push(job("poll")));
  for (int i = 0; i < 30; ++i) team_b.push(job("poll"));  // newer, and not team-a's
  auto events = team_a.get("/ojs/v1/events?queues=poll&limit=3").body["events"];
  ASSERT_EQ(events.size(), 3u) << events.dump();
  for (const auto& e : events) EXPECT_TRUE(mine.count(e["subject"])) << e.dump();
}

// The event switch: --events off records nothing and both event
// endpoints say so; --events-max-len bounds each queue's stream, and a client
// resuming from a trimmed position is told about the gap.
TEST(EventSwitch, OffRecordsNothingAndTheEndpointsSaySo) {
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--events", "off"}};
  Api api{broker.url()};
  api.push(job("off-q"));
  run_one(api, "off-q", "w");
  const auto xlen = run_process({"redis-cli", "-p", std::to_string(redis.port()), "XLEN", "ojs:{off-q}:events"}, 10);
  EXPECT_EQ(xlen.output, "0\n");
  auto polled = api.get("/ojs/v1/events");
  EXPECT_EQ(polled.status, 422);
  EXPECT_NE(polled.body["error"]["message"].get<std::string>().find("--events off"), std::string::npos) << polled.body.dump();
  SseClient sse(broker.port(), "/ojs/v1/events/stream");
  EXPECT_EQ(sse.status(), 422);
  EXPECT_NE(sse.error_body().find("--events off"), std::string::npos);
}

TEST(EventSwitch, BoundedStreamsAndAGapOnResume) {
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--events-max-len", "100"}};
  Api api{broker.url()};
  std::string first;
  {
    SseClient sse(broker.port(), "/ojs/v1/events/stream");
    ASSERT_EQ(sse.status(), 200);
    api.push(job("cap-q"));
    next_event(sse, &first);
  }
  json batch = {{"jobs", json::array()}};
  for (int i = 0; i < 100; ++i) batch["jobs"].push_back(job("cap-q"));
  for (int i = 0; i < 5; ++i) ASSERT_EQ(api.post("/ojs/v1/jobs/batch", batch).status, 201);
  const auto xlen = run_process({"redis-cli", "-p", std::to_string(redis.port()), "XLEN", "ojs:{cap-q}:events"}, 10);
  EXPECT_LT(std::stoi(xlen.output), 300) << "501 events, capped at about 100";
  SseClient again(broker.port(), "/ojs/v1/events/stream", {"Last-Event-ID: " + first});
  ASSERT_EQ(again.status(), 200);
  auto gap = again.next(20s);
  ASSERT_TRUE(gap.has_value());
  EXPECT_EQ(gap->event, "system.gap");
  auto body = json::parse(gap->data);
  EXPECT_TRUE(body.contains("gap_start") && body.contains("gap_end")) << gap->data;
  auto after = next_event(again);
  EXPECT_EQ(after["type"], "job.enqueued");  // then what is retained
}
