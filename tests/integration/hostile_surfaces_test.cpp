// Events, workflows, progress, gangs, worker documents and the HTTP server itself
// under hostile use: each test reproduces a defect once found there.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <csignal>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"
#include "support/role_tokens.hpp"
#include "support/sse_client.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

// A raw loopback connection to the broker (no HTTP client: it may send half a request).
class RawConnection {
 public:
  explicit RawConnection(std::uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    timeval limit{30, 0};  // a bound for the test, not an expected time
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  }
  ~RawConnection() { ::close(fd_); }
  RawConnection(const RawConnection&) = delete;
  bool connected() const { return connected_; }
  bool send(const std::string& bytes) { return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size()); }
  // True when the broker closed the connection (end of stream or reset) before the test's bound.
  bool closed_by_peer() {
    char buf[512];
    for (;;) {
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n == 0) return true;
      if (n < 0) return errno == ECONNRESET;
      // a reply (e.g. 408) before the close is fine: read on
    }
  }

 private:
  int fd_;
  bool connected_ = false;
};

json job(const std::string& queue, const std::string& type = "h2.task") {
  return {{"type", type}, {"args", json::array()}, {"options", {{"queue", queue}}}};
}

// Calls of one Redis command so far (INFO commandstats), e.g. "hgetall".
long long redis_calls(const RedisServer& redis, const std::string& command) {
  for (const auto& line : redis_lines(redis, {"INFO", "commandstats"})) {
    const std::string prefix = "cmdstat_" + command + ":calls=";
    if (line.rfind(prefix, 0) == 0) return std::stoll(line.substr(prefix.size()));
  }
  return 0;
}

}  // namespace

class HostileSurfacesTokens : public ::testing::Test, protected RoleTokenBroker {
 protected:
  HostileSurfacesTokens() : RoleTokenBroker("hostile_surfaces") {}
};

// Item 5: a worker that does not hold the job neither writes its progress nor
// extends its reservation; another tenant neither reads nor writes it.
TEST_F(HostileSurfacesTokens, ProgressIsTheHoldersAndItsTenants) {
  const auto id = team_a.push(job("h2-prog"));
  ASSERT_EQ(node_a.fetch({"h2-prog"}, "node-a").size(), 1u);

  // Without a worker_id a bound token is refused, as on ACK; with its own it is not the holder.
  auto r = pool.post("/ojs/v1/workers/progress", {{"job_id", id}, {"progress", 0.5}});
  EXPECT_EQ(r.status, 403) << r.body.dump();
  EXPECT_EQ(r.body["error"]["details"]["field"], "worker_id");
  r = pool.call("PUT", "/ojs/v1/jobs/" + id + "/progress", {{"progress", 0.5}});
  EXPECT_EQ(r.status, 403) << r.body.dump();
  r = pool.post("/ojs/v1/workers/progress", {{"job_id", id}, {"worker_id", "pool-1"}, {"progress", 0.5}});
  EXPECT_EQ(r.status, 409) << r.body.dump();
  r = pool.call("PUT", "/ojs/v1/jobs/" + id + "/progress", {{"worker_id", "pool-1"}, {"progress", 0.5}});
  EXPECT_EQ(r.status, 409) << r.body.dump();
  auto info = admin.get("/ojs/v1/jobs/" + id).body["job"];
  EXPECT_FALSE(info.contains("progress")) << info.dump();

  // Another tenant gets 404, as for INFO.
  EXPECT_EQ(team_b.get("/ojs/v1/jobs/" + id + "/progress").status, 404);
  EXPECT_EQ(team_a.get("/ojs/v1/jobs/" + id + "/progress").status, 200);

  // The holder reports.
  r = node_a.post("/ojs/v1/workers/progress", {{"job_id", id}, {"worker_id", "node-a"}, {"progress", 0.5}});
  ASSERT_EQ(r.status, 200) << r.body.dump();
  EXPECT_EQ(r.body["accepted"], true);
  EXPECT_DOUBLE_EQ(team_a.get("/ojs/v1/jobs/" + id + "/progress").body["progress"].get<double>(), 0.5);
}

class HostileSurfaces : public ::testing::Test {
 protected:
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
};

// Item 19: a worker's capabilities document is bounded (bytes and list lengths),
// on heartbeat and FETCH alike, with a 400 naming the field; nothing is stored.
TEST_F(HostileSurfaces, CapabilitiesDocumentsAreBounded) {
  const json big = {{"labels", {{"pad", std::string(70 * 1024, 'x')}}}};
  auto r = api.post("/ojs/v1/workers/heartbeat", {{"worker_id", "fat-1"}, {"capabilities", big}});
  EXPECT_EQ(r.status, 400) << r.body.dump().substr(0, 300);
  EXPECT_EQ(r.body["error"]["details"]["field"], "capabilities");
  r = api.post("/ojs/v1/workers/fetch", {{"worker_id", "fat-2"}, {"queues", {"h2-caps"}}, {"capabilities", big}});
  EXPECT_EQ(r.status, 400) << r.body.dump().substr(0, 300);
  EXPECT_EQ(r.body["error"]["details"]["field"], "capabilities");

  json runtimes = json::array();
  for (int i = 0; i < 300; ++i) runtimes.push_back("rt" + std::to_string(i));
  r = api.post("/ojs/v1/workers/heartbeat", {{"worker_id", "fat-3"}, {"capabilities", {{"runtimes", runtimes}}}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body["error"]["details"]["field"], "capabilities.runtimes");

  const auto listed = api.get("/ojs/v1/admin/workers");  // named: a range-for over a temporary's body["workers"] read freed memory
  ASSERT_TRUE(listed.body["workers"].is_array()) << listed.body.dump();
  for (const auto& w : listed.body["workers"]) EXPECT_NE(w["id"].get<std::string>().rfind("fat-", 0), 0u) << w["id"];
  // A real document still passes.
  r = api.post("/ojs/v1/workers/heartbeat",
               {{"worker_id", "thin-1"}, {"capabilities", {{"gpu", {{"type", "nvidia-h100"}, {"count", 8}, {"memory_gb", 80}}}}}});
  EXPECT_EQ(r.status, 200) << r.body.dump();
}

// Item 3: a workflow step discarded because its expires_at passed ends its step,
// on the plain claim and on the gang claim alike: the workflow does not stay running.
TEST_F(HostileSurfaces, AStepDiscardedByExpiresAtEndsItsWorkflowStep) {
  // expires_at 1-2 s ahead (a past one is refused at creation), then let it pass.
  const auto expired_by = std::chrono::system_clock::now() + std::chrono::seconds(3);
  const std::string soon = iso_in(std::chrono::milliseconds(1000));
  json plain = job("h2-wf-exp", "exp.plain");
  plain["options"]["expires_at"] = soon;
  auto r = api.post("/ojs/v1/workflows", {{"type", "chain"}, {"steps", {plain, job("h2-wf-exp", "exp.never")}}});
  ASSERT_EQ(r.status, 201) << r.body.dump();
  const std::string chain = r.body["workflow"]["id"];
  json gang = ml_job("h2-wf-gang", {{"ext_ml_gpu_count", 4}, {"ext_ml_gang", {{"size", 2}}}});
  gang["options"]["expires_at"] = soon;
  r = api.post("/ojs/v1/workflows", {{"type", "group"}, {"jobs", {gang}}});
  ASSERT_EQ(r.status, 201) << r.body.dump();
  const std::string group = r.body["workflow"]["id"];
  std::this_thread::sleep_until(expired_by);

  EXPECT_TRUE(api.fetch({"h2-wf-exp"}, "w").empty());  // discarded, never delivered
  auto wf = api.get("/ojs/v1/workflows/" + chain).body["workflow"];
  EXPECT_EQ(wf["state"], "failed") << wf.dump();
  EXPECT_EQ(wf["failed_step_index"], 0) << wf.dump();

  EXPECT_TRUE(api.fetch({"h2-wf-gang"}, "g1", 1, {{"capabilities", example_worker("4xa100-pcie")}}).empty());
  wf = api.get("/ojs/v1/workflows/" + group).body["workflow"];
  EXPECT_EQ(wf["state"], "failed") << wf.dump();
}

// Item 7: the ids a workflow reserved for later steps (and callbacks) are its own:
// a plain PUSH naming one is a 409, and the step is later stored as the workflow's.
TEST_F(HostileSurfaces, APlainPushCannotTakeAChainStepsReservedId) {
  auto r = api.post("/ojs/v1/workflows", {{"type", "chain"}, {"steps", {job("h2-wf-id", "chain.first"), job("h2-wf-id", "chain.second")}}});
  ASSERT_EQ(r.status, 201) << r.body.dump();
  const std::string second = r.body["workflow"]["steps"][1]["job_id"];
  json intruder = job("h2-other", "intruder");
  intruder["id"] = second;
  r = api.post("/ojs/v1/jobs", intruder);
  EXPECT_EQ(r.status, 409) << r.body.dump();
  EXPECT_EQ(r.body["error"]["code"], "duplicate") << r.body.dump();

  auto first = api.fetch({"h2-wf-id"}, "w");
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", first[0]["id"]}, {"result", 1}}).status, 200);
  auto next = api.fetch({"h2-wf-id"}, "w");
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0]["id"], second);
  EXPECT_EQ(next[0]["type"], "chain.second");
  EXPECT_TRUE(api.fetch({"h2-other"}, "w").empty());
}

// Item 9 (slowloris): a half-sent request and an idle connection are closed by the
// read and idle timeouts, unauthenticated or not.
TEST(HostileSurfacesHttp, HalfSentRequestsAndIdleConnectionsAreClosed) {
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--http-header-timeout-ms", "300", "--http-idle-timeout-ms", "300", "--http-body-timeout-ms", "300"}};
  RawConnection half_header(broker.port());
  ASSERT_TRUE(half_header.connected());
  ASSERT_TRUE(half_header.send("POST /ojs/v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"));
  RawConnection half_body(broker.port());
  ASSERT_TRUE(half_body.send("POST /ojs/v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"type\":"));
  RawConnection idle(broker.port());
  EXPECT_TRUE(half_header.closed_by_peer());
  EXPECT_TRUE(half_body.closed_by_peer());
  EXPECT_TRUE(idle.closed_by_peer());
  EXPECT_EQ(Api(broker.url()).get("/ojs/v1/health").status, 200);
}

// Item 9: at --max-connections, one more connection closes the one that has waited
// longest for its request; /health still answers while many half-sent requests are open.
TEST(HostileSurfacesHttp, TheConnectionCapClosesTheLongestWaitingAndHealthAnswers) {
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--max-connections", "40", "--http-header-timeout-ms", "600000", "--http-idle-timeout-ms", "600000"}};
  std::vector<std::unique_ptr<RawConnection>> slow;
  for (int i = 0; i < 120; ++i) {
    slow.push_back(std::make_unique<RawConnection>(broker.port()));
    ASSERT_TRUE(slow.back()->connected()) << i;
    slow.back()->send("GET /ojs/v1/health HTTP/1.1\r\nHost: x\r\n");  // never finished
  }
  Api api(broker.url());
  for (int i = 0; i < 5; ++i) EXPECT_EQ(api.get("/ojs/v1/health").status, 200);
  EXPECT_TRUE(slow.front()->closed_by_peer()) << "the oldest half-sent request was not closed at the cap";
}

// Item 1: event reads are bounded per request (kEventScanBudget entries over all
// queues, paged; `truncated` says when it ran out), and a tenant-pinned reader is
// filtered by the tenant carried in each entry, not by reading every job.
TEST_F(HostileSurfacesTokens, EventReadsAreBoundedAndTenantFilteringReadsNoJobs) {
  std::vector<std::string> mine;
  for (int i = 0; i < 3; ++i) mine.push_back(team_a.push(job("h2-ev-a")));
  json batch = {{"jobs", json::array()}};
  for (int i = 0; i < 1000; ++i) batch["jobs"].push_back(job("h2-ev-a"));
  json batch_b = {{"jobs", json::array()}};
  for (int i = 0; i < 1000; ++i) batch_b["jobs"].push_back(job("h2-ev-b"));
  for (int i = 0; i < 6; ++i) {  // 12,000 newer events of team-b's jobs
    ASSERT_EQ(team_b.post("/ojs/v1/jobs/batch", batch).status, 201);
    ASSERT_EQ(team_b.post("/ojs/v1/jobs/batch", batch_b).status, 201);
  }

  const auto reads_before = redis_calls(redis, "hgetall");
  auto r = team_a.get("/ojs/v1/events?limit=100");  // every queue: more than one request may read
  ASSERT_EQ(r.status, 200) << r.body.dump().substr(0, 300);
  EXPECT_EQ(r.body.value("truncated", false), true) << "12,003 entries were not all read: the reply says so";
  EXPECT_TRUE(r.body["events"].empty()) << r.body["events"].dump().substr(0, 300);
  // One queue (6,003 entries) is within the bound: team-a's three oldest events are found.
  r = team_a.get("/ojs/v1/events?queues=h2-ev-a&limit=100");
  ASSERT_EQ(r.status, 200);
  EXPECT_FALSE(r.body.contains("truncated")) << r.body.dump().substr(0, 300);
  ASSERT_EQ(r.body["events"].size(), 3u) << r.body["events"].dump().substr(0, 300);
  for (const auto& e : r.body["events"]) EXPECT_NE(std::find(mine.begin(), mine.end(), e["subject"]), mine.end()) << e.dump();
  // Reading each job's tenant took one HGETALL per job (about 3,000 for these two
  // polls); what is left is the broker's background passes (cron, preemption).
  EXPECT_LT(redis_calls(redis, "hgetall") - reads_before, 1000) << "the tenant filter read the jobs";

  // An SSE replay from team-a's first event: bounded too, and what it could not
  // replay is a system.gap, not a read of every job.
  const std::string from = r.body["events"][2]["id"].get<std::string>() + "@h2-ev-a";
  const auto replay_reads = redis_calls(redis, "hgetall");
  SseClient sse(broker.port(), "/ojs/v1/events/stream", {"Authorization: Bearer team-a-token", "Last-Event-ID: " + from});
  ASSERT_EQ(sse.status(), 200);
  auto first = sse.next();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->event, "system.gap") << first->data;
  EXPECT_LT(redis_calls(redis, "hgetall") - replay_reads, 1000) << "the replay read the jobs (12,002 of them before)";
  EXPECT_EQ(admin.get("/ojs/v1/health").status, 200);
}

// Item 6: a chain step gets only its immediate parent's result (at its step index),
// so storage grows with the results, not with their square.
TEST_F(HostileSurfaces, ChainStepsCarryOnlyTheirParentsResult) {
  std::vector<json> steps;
  for (int i = 0; i < 4; ++i) steps.push_back(job("h2-chain", "c.step" + std::to_string(i)));
  auto r = api.post("/ojs/v1/workflows", {{"type", "chain"}, {"steps", steps}});
  ASSERT_EQ(r.status, 201) << r.body.dump();
  const std::string wf = r.body["workflow"]["id"];
  const std::string big(10000, 'r');
  json last;
  for (int i = 0; i < 4; ++i) {
    auto got = api.fetch({"h2-chain"}, "w");
    ASSERT_EQ(got.size(), 1u) << i;
    last = got[0];
    ASSERT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", last["id"]}, {"result", {{"step", i}, {"pad", big}}}}).status, 200);
  }
  EXPECT_EQ(last["parent_results"].size(), 3u) << "indexed by step";
  EXPECT_TRUE(last["parent_results"][0].is_null());
  EXPECT_TRUE(last["parent_results"][1].is_null());
  EXPECT_EQ(last["parent_results"][2]["step"], 2);
  // Earlier results stay readable on the workflow.
  auto view = api.get("/ojs/v1/workflows/" + wf).body["workflow"];
  EXPECT_EQ(view["state"], "completed");
  EXPECT_EQ(view["steps"][0]["result"]["step"], 0);
}

// A PUSH of `body` answered while the redis-server is stopped (SIGSTOP); it goes on
// (SIGCONT) once the answer is in. The caller's earlier PUSH made the queue and
// filled the pool, so the stall is met by the PUSH itself.
static void push_during_stall(RedisServer& redis, Api& api, const json& body, Api::Reply& answer) {
  std::string pid;
  for (const auto& line : redis_lines(redis, {"INFO", "server"}))
    if (line.rfind("process_id:", 0) == 0) pid = line.substr(11);
  while (!pid.empty() && (pid.back() == '\r' || pid.back() == '\n')) pid.pop_back();
  ASSERT_FALSE(pid.empty());
  ASSERT_EQ(::kill(std::stoi(pid), SIGSTOP), 0);
  answer = api.post("/ojs/v1/jobs", body);
  ASSERT_EQ(::kill(std::stoi(pid), SIGCONT), 0);
}

// The write of a PUSH, without the schema registry's read before it.
class HostileSurfacesWithoutSchemaChecks : public HostileSurfaces {
 protected:
  BrokerProcess unchecked{redis.url(), {"--schema-validation", "off"}};
  Api api{unchecked.url()};
};

// Item 13: a PUSH that reached a stalled Redis (SIGSTOP) is answered 504
// backend_timeout, not retryable, with the id it was sent under; resending it with
// that id stores the job exactly once, however the stall ends.
TEST_F(HostileSurfacesWithoutSchemaChecks, APushDuringARedisStallIsSafeToRetryWithItsId) {
  api.push(job("h2-stall"));  // the queue exists; the pool holds connections
  Api::Reply r{};
  ASSERT_NO_FATAL_FAILURE(push_during_stall(redis, api, job("h2-stall", "stalled"), r));
  EXPECT_EQ(r.status, 504) << r.body.dump();
  EXPECT_EQ(r.body["error"]["code"], "backend_timeout");
  EXPECT_EQ(r.body["error"]["retryable"], false);
  ASSERT_TRUE(r.body["error"]["details"].contains("job_id")) << r.body.dump();
  const std::string id = r.body["error"]["details"]["job_id"];

  json again = job("h2-stall", "stalled");
  again["id"] = id;
  r = api.post("/ojs/v1/jobs", again);
  EXPECT_TRUE(r.status == 201 || (r.status == 409 && r.body["error"]["code"] == "duplicate")) << r.status << " " << r.body.dump();
  // Exactly one job of that type, under that id.
  int stalled = 0;
  for (const auto& j : api.fetch({"h2-stall"}, "w", 10)) {
    if (j["type"] == "stalled") {
      ++stalled;
      EXPECT_EQ(j["id"], id);
    }
  }
  EXPECT_EQ(stalled, 1);
}

// With the schema registry on (the default), a PUSH of a type not looked up within
// the last second first reads the type's schemas: when that read stalls nothing has
// been written, so the PUSH is answered 503 retryable, and nothing is stored.
TEST_F(HostileSurfaces, APushWhoseSchemaReadStallsIsRetryableAndStoresNothing) {
  api.push(job("h2-stall"));  // the queue exists; the pool holds connections
  Api::Reply r{};
  ASSERT_NO_FATAL_FAILURE(push_during_stall(redis, api, job("h2-stall", "never-seen"), r));
  EXPECT_EQ(r.status, 503) << r.body.dump();
  EXPECT_EQ(r.body["error"]["retryable"], true) << r.body.dump();
  for (const auto& j : api.fetch({"h2-stall"}, "w", 10)) EXPECT_NE(j["type"], "never-seen");
}

// Item 8: a gang that cannot form (no second worker exists) is released at its hold
// deadline and then backs off: the worker it held runs the higher-priority 1-GPU
// job that fits instead of being held again by the same gang on every FETCH.
TEST_F(HostileSurfaces, AGangThatCannotFormYieldsToAJobThatFits) {
  const json w1 = {{"capabilities", example_worker("4xa100-pcie")}};
  api.push(ml_job("h2-gang", {{"ext_ml_gpu_count", 4}, {"ext_ml_gang", {{"size", 2}, {"timeout_seconds", 1}}}}));
  EXPECT_TRUE(api.fetch({"h2-gang"}, "w1", 1, w1).empty());  // held as rank 0
  json small = ml_job("h2-gang", {{"ext_ml_gpu_count", 1}});
  small["options"]["priority"] = 50;
  const auto fits = api.push(small);
  EXPECT_TRUE(api.fetch({"h2-gang"}, "w1", 1, w1).empty());  // its GPUs are the gang's while it forms
  bool released = false;  // the hold deadline passes (the maintenance loop releases it)
  for (int i = 0; i < 100 && !released; ++i, sleep_ms(100))
    released = !api.get("/ojs/v1/events?queues=h2-gang&types=job.gang_released").body["events"].empty();
  ASSERT_TRUE(released);
  auto got = api.fetch({"h2-gang"}, "w1", 1, w1);
  ASSERT_EQ(got.size(), 1u) << "the gang was held again ahead of a job that fits";
  EXPECT_EQ(got[0]["id"], fits);
}

// Decided (docs/operations.md, Security): /health answers 503 while Redis answers
// PING but refuses every write (OOM under maxmemory): the broker cannot serve.
TEST_F(HostileSurfaces, HealthIsUnavailableWhileRedisRefusesWrites) {
  ASSERT_EQ(api.get("/ojs/v1/health").status, 200);
  redis_lines(redis, {"CONFIG", "SET", "maxmemory-policy", "noeviction"});
  redis_lines(redis, {"CONFIG", "SET", "maxmemory", "1"});
  auto r = api.get("/ojs/v1/health");
  redis_lines(redis, {"CONFIG", "SET", "maxmemory", "0"});
  EXPECT_EQ(r.status, 503) << r.body.dump();
  EXPECT_EQ(r.body["status"], "unhealthy") << r.body.dump();
  EXPECT_EQ(r.body["backend"]["status"], "refusing_writes") << r.body.dump();
  EXPECT_NE(r.body["backend"].value("error", "").find("OOM"), std::string::npos) << r.body.dump();
  EXPECT_EQ(api.get("/ojs/v1/health").status, 200);
}
