// OJS extension documents an independent runner measures: CORS
// (ojs-http-binding.md §20), backpressure (ojs-backpressure.md), graceful shutdown
// (ojs-graceful-shutdown.md), readiness and request ids, tenant statistics
// (ojs-multi-tenancy.md §10), progress `message`, retry-policy validation, the
// worker's error type on NACK and the heartbeat's lifecycle state. Real
// redis-server, real broker, real HTTP; the CORS case also a real headless Chromium.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <future>

#include "ojs/client/http_client.hpp"
#include "support/child_process.hpp"
#include "support/chromium.hpp"
#include "support/eventually.hpp"
#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

ojs::HttpResponse raw(const std::string& base, const std::string& method, const std::string& path, const std::string& body = {},
                      const std::vector<std::string>& headers = {}, long timeout_ms = 30000) {
  ojs::HttpClientOptions options;
  options.base_url = base;
  options.timeout_ms = timeout_ms;
  ojs::HttpClient client(options);
  std::vector<std::string> all{"Content-Type: application/openjobspec+json"};
  all.insert(all.end(), headers.begin(), headers.end());
  return client.request(method, path, body, all);
}

std::string header(const ojs::HttpResponse& r, const std::string& lower_name) {
  auto it = r.headers.find(lower_name);
  return it == r.headers.end() ? std::string() : it->second;
}

json bounded(long long max_depth, const std::string& strategy = "reject") {
  return {{"backpressure", {{"max_depth", max_depth}, {"strategy", strategy}}}};
}

}  // namespace

class SpecExtensions : public ::testing::Test {
 protected:
  RedisServer redis;
};

// ---- CORS (ojs-http-binding.md §20) ----

TEST_F(SpecExtensions, CorsPreflightAndHeadersOnlyForListedOrigins) {
  BrokerProcess broker{redis.url(), {"--cors-origin", "http://dash.example:3000", "--cors-origin", "https://ops.example"}};
  const auto pre = raw(broker.url(), "OPTIONS", "/ojs/v1/admin/queues", {},
                       {"Origin: http://dash.example:3000", "Access-Control-Request-Method: GET",
                        "Access-Control-Request-Headers: authorization, x-request-id"});
  EXPECT_EQ(pre.status, 204) << pre.body;
  EXPECT_EQ(header(pre, "access-control-allow-origin"), "http://dash.example:3000");
  EXPECT_NE(header(pre, "access-control-allow-methods").find("GET"), std::string::npos);
  EXPECT_NE(header(pre, "access-control-allow-methods").find("DELETE"), std::string::npos);
  EXPECT_NE(header(pre, "access-control-allow-headers").find("Authorization"), std::string::npos);
  EXPECT_NE(header(pre, "access-control-allow-headers").find("X-Request-Id"), std::string::npos);
  EXPECT_NE(header(pre, "access-control-allow-headers").find("Idempotency-Key"), std::string::npos);  // a browser's retried PUSH
  EXPECT_EQ(header(pre, "access-control-max-age"), "86400");

  const auto get = raw(broker.url(), "GET", "/ojs/v1/queues", {}, {"Origin: https://ops.example"});
  EXPECT_EQ(get.status, 200);
  EXPECT_EQ(header(get, "access-control-allow-origin"), "https://ops.example");
  EXPECT_NE(header(get, "access-control-expose-headers").find("X-Request-Id"), std::string::npos);
  EXPECT_NE(header(get, "access-control-expose-headers").find("Retry-After"), std::string::npos);
  EXPECT_NE(header(get, "access-control-expose-headers").find("Idempotent-Replayed"), std::string::npos);
  EXPECT_EQ(header(get, "vary"), "Origin");

  // Not listed: nothing that would let a browser read the answer; never "*".
  for (const std::string method : {"OPTIONS", "GET"}) {
    const auto other = raw(broker.url(), method, "/ojs/v1/queues", {}, {"Origin: http://evil.example"});
    EXPECT_TRUE(header(other, "access-control-allow-origin").empty()) << method;
    EXPECT_TRUE(header(other, "access-control-allow-methods").empty()) << method;
  }
  // An OPTIONS on an unknown path is still a 404.
  EXPECT_EQ(raw(broker.url(), "OPTIONS", "/ojs/v1/nowhere", {}, {"Origin: https://ops.example"}).status, 404);
}

TEST_F(SpecExtensions, CorsOriginFlagRefusesAMalformedOrigin) {
  const auto r = run_process({binary_path("broker/broker"), "--redis", redis.url(), "--port", "0", "--cors-origin", "*"}, 30);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("cors-origin"), std::string::npos) << r.output;
}

// A page served from another origin calls an admin endpoint with fetch() (a custom
// header: the browser sends a preflight first). Listed: the browser reads the reply;
// not listed: the browser refuses it.
TEST_F(SpecExtensions, BrowserOnAnotherOriginIsServedOnlyWhenListed) {
  const auto chromium = find_chromium();
  ASSERT_FALSE(chromium.empty()) << "chromium not found on PATH; install the Debian package `chromium` (scripts/install-deps.sh)";
  const auto page_port = free_port();
  const std::string page_origin = "http://127.0.0.1:" + std::to_string(page_port);
  BrokerProcess listed{redis.url(), {"--cors-origin", page_origin}};
  BrokerProcess unlisted{redis.url(), {"--cors-origin", "http://127.0.0.1:1"}};
  Api(listed.url()).push(job_in("cors-q"));

  const auto dir = make_temp_dir("cors-page");
  for (const auto& [name, broker] : {std::pair<std::string, BrokerProcess*>{"listed", &listed}, {"unlisted", &unlisted}}) {
    std::ofstream(dir + "/" + name + ".html")
        << "<!doctype html><html><head><title>cors</title></head><body><div id=\"out\">pending</div><script>\n"
        << "fetch('" << broker->url() << "/ojs/v1/admin/queues', {headers: {'X-Request-Id': 'browser-1'}})\n"
        << "  .then(r => r.text().then(t => { document.getElementById('out').textContent =\n"
        << "    'SERVED ' + r.status + ' ' + r.headers.get('X-Request-Id') + ' ' + (t.includes('cors-q') ? 'has-queue' : 'no-queue'); }))\n"
        << "  .catch(e => { document.getElementById('out').textContent = 'REFUSED ' + e; });\n"
        << "</script></body></html>\n";
  }
  ChildProcess server({"/usr/bin/python3", "-m", "http.server", std::to_string(page_port), "--bind", "127.0.0.1", "--directory", dir});
  ASSERT_TRUE(eventually(10000, [&] { return raw(page_origin, "GET", "/listed.html").status == 200; })) << "page server did not start";

  auto dom_of = [&](const std::string& page) {
    auto args = chromium_args(chromium, dir + "/profile-" + page);
    args.insert(args.end(), {"--virtual-time-budget=10000", "--dump-dom", page_origin + "/" + page + ".html"});
    return run_process(args, 120).output;
  };
  // The outcome is the text of div#out (the dump also holds the script's source).
  const auto served = dom_of("listed");
  EXPECT_NE(served.find("<div id=\"out\">SERVED 200 browser-1 has-queue</div>"), std::string::npos) << served;
  const auto refused = dom_of("unlisted");
  EXPECT_NE(refused.find("<div id=\"out\">REFUSED"), std::string::npos) << refused;
}

// ---- Request ids, readiness, health (ojs-http-binding.md §6.5, ojs-observability.md §10) ----

TEST_F(SpecExtensions, RequestIdIsEchoedOrGenerated) {
  BrokerProcess broker{redis.url()};
  const auto echoed = raw(broker.url(), "GET", "/ojs/v1/health", {}, {"X-Request-Id: req_client-42"});
  EXPECT_EQ(header(echoed, "x-request-id"), "req_client-42");
  const auto a = raw(broker.url(), "GET", "/ojs/v1/queues");
  const auto b = raw(broker.url(), "GET", "/ojs/v1/nowhere");  // errors carry one too
  EXPECT_EQ(header(a, "x-request-id").rfind("req_", 0), 0u) << header(a, "x-request-id");
  EXPECT_EQ(header(b, "x-request-id").rfind("req_", 0), 0u);
  EXPECT_NE(header(a, "x-request-id"), header(b, "x-request-id"));
}

TEST_F(SpecExtensions, ReadyAndHealthSpeakTheObservabilityVocabulary) {
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  const auto ready = api.get("/ojs/v1/ready");
  EXPECT_EQ(ready.status, 200) << ready.body.dump();
  EXPECT_EQ(ready.body["status"], "ready");
  const auto health = api.get("/ojs/v1/health");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body["status"], "healthy");
  EXPECT_EQ(health.body["backend"]["status"], "connected");
  // The probe paths ext-observability uses answer the same, without a token.
  EXPECT_EQ(api.get("/ready").body["status"], "ready");
  EXPECT_EQ(api.get("/health").body["status"], "healthy");
  redis.stop();
  const auto down = api.get("/ojs/v1/ready");
  EXPECT_EQ(down.status, 503);
  EXPECT_EQ(down.body["status"], "not_ready");
  EXPECT_EQ(api.get("/ready").status, 503);
  EXPECT_EQ(api.get("/ojs/v1/health").body["status"], "unhealthy");
}

// ---- Graceful shutdown (ojs-graceful-shutdown.md §9) ----

TEST_F(SpecExtensions, DrainRefusesNewWorkAndReportsDraining) {
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  const auto id = api.push(job_in("drain-q"));
  ASSERT_EQ(api.fetch({"drain-q"}, "w1").size(), 1u);
  const auto drained = api.post("/ojs/v1/admin/drain", json::object());
  ASSERT_EQ(drained.status, 200) << drained.body.dump();
  EXPECT_EQ(drained.body["status"], "draining");

  const auto push = raw(broker.url(), "POST", "/ojs/v1/jobs", job_in("drain-q").dump());
  EXPECT_EQ(push.status, 503) << push.body;
  EXPECT_FALSE(header(push, "retry-after").empty());
  EXPECT_EQ(api.post("/ojs/v1/workers/fetch", {{"queues", {"drain-q"}}, {"worker_id", "w2"}}).status, 503);
  // Work in hand finishes: ACK goes on; health and readiness say draining.
  EXPECT_EQ(api.post("/ojs/v1/workers/ack", {{"job_id", id}, {"result", json::object()}}).status, 200);
  const auto health = api.get("/ojs/v1/health");
  EXPECT_EQ(health.status, 200);  // alive: a liveness probe must not kill a draining broker
  EXPECT_EQ(health.body["status"], "draining");
  const auto ready = api.get("/ojs/v1/ready");
  EXPECT_EQ(ready.status, 503);
  EXPECT_EQ(ready.body["status"], "draining");

  EXPECT_EQ(api.call("DELETE", "/ojs/v1/admin/drain").body["status"], "running");
  EXPECT_EQ(raw(broker.url(), "POST", "/ojs/v1/jobs", job_in("drain-q").dump()).status, 201);
}

// A worker announcing its shutdown (POST /workers/beat, state drain, a bare job count)
// is acknowledged, gets no new job, and its health says drain; 404 for an unknown one.
TEST_F(SpecExtensions, ShutdownBeatDrainsTheWorker) {
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  api.push(job_in("beat-q"));
  auto beat = api.post("/ojs/v1/workers/beat", {{"worker_id", "w-beat"}, {"state", "drain"}, {"active_jobs", 2}});
  ASSERT_EQ(beat.status, 200) << beat.body.dump();
  EXPECT_EQ(beat.body["acknowledged"], true);
  auto health = api.get("/ojs/v1/workers/w-beat/health");
  ASSERT_EQ(health.status, 200) << health.body.dump();
  EXPECT_EQ(health.body["state"], "drain");
  EXPECT_EQ(health.body["worker_id"], "w-beat");
  EXPECT_EQ(api.fetch({"beat-q"}, "w-beat").size(), 0u) << "a draining worker takes no new job";
  EXPECT_EQ(api.fetch({"beat-q"}, "w-other").size(), 1u);
  EXPECT_EQ(api.get("/ojs/v1/workers/w-never/health").status, 404);
  // The worker protocol's heartbeat keeps its rule: a count needs the ids.
  EXPECT_EQ(api.post("/ojs/v1/workers/heartbeat", {{"worker_id", "w-hb"}, {"active_jobs", 2}}).status, 400);
  EXPECT_EQ(api.post("/ojs/v1/workers/heartbeat", {{"worker_id", "w-hb"}}).body["acknowledged"], true);
}

// meta.test_directive steers a heartbeat only behind the test hook --test-directives.
TEST_F(SpecExtensions, TestDirectiveIsServedOnlyBehindItsFlag) {
  for (const bool hook : {false, true}) {
    BrokerProcess broker{redis.url(), hook ? std::vector<std::string>{"--test-directives"} : std::vector<std::string>{}};
    Api api{broker.url()};
    const std::string queue = hook ? "td-on" : "td-off";
    for (const std::string directive : {"quiet", "terminate"}) {
      json job = job_in(queue);
      job["options"]["metadata"] = {{"test_directive", directive}};
      const auto id = api.push(job);
      const std::string worker = queue + "-" + directive;
      ASSERT_EQ(api.fetch({queue}, worker).size(), 1u);
      auto beat = api.post("/ojs/v1/workers/heartbeat", {{"worker_id", worker}, {"active_jobs", {id}}});
      ASSERT_EQ(beat.status, 200) << beat.body.dump();
      EXPECT_EQ(beat.body["state"], hook ? directive : "running") << "hook " << hook;
    }
  }
}

// SIGTERM: the broker stops accepting, lets the request in flight (a PUSH waiting
// for room in a full `block` queue) finish with its answer, then exits 0.
TEST_F(SpecExtensions, SigtermLetsTheRequestInFlightFinish) {
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  ASSERT_EQ(api.call("PUT", "/ojs/v1/admin/queues/gs-q/config", bounded(1, "block")).status, 200);
  api.push(job_in("gs-q"));
  auto waiting = std::async(std::launch::async, [&] {
    return raw(broker.url(), "POST", "/ojs/v1/jobs", job_in("gs-q").dump(), {"OJS-Block-Timeout: 3"});
  });
  // The waiting PUSH and this request: two in flight.
  ASSERT_TRUE(eventually(10000, [&] { return api.get("/ojs/v1/admin/drain").body.value("in_flight", 0) >= 2; }));
  const int status = broker.signal_and_wait(SIGTERM, 20000);
  const auto answer = waiting.get();
  EXPECT_EQ(answer.status, 429) << answer.transport_error << " " << answer.body;  // its own answer, not a cut connection
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

// ---- Backpressure (ojs-backpressure.md) ----

// A held job is still in the queue (state pending): holding one makes no room, for
// a single PUSH nor for a batch.
TEST_F(SpecExtensions, HeldJobsCountInTheDepth) {
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  ASSERT_EQ(api.call("PUT", "/ojs/v1/admin/queues/bp-hold/config", bounded(2)).status, 200);
  const auto a = api.push(job_in("bp-hold"));
  api.push(job_in("bp-hold"));
  ASSERT_EQ(api.post("/ojs/v1/jobs/" + a + "/hold", json::object()).status, 200);
  const auto full = raw(broker.url(), "POST", "/ojs/v1/jobs", job_in("bp-hold").dump());
  EXPECT_EQ(full.status, 429) << full.body;
  EXPECT_EQ(header(full, "x-ojs-queue-depth"), "2");
  EXPECT_EQ(api.post("/ojs/v1/jobs/batch", {{"jobs", {job_in("bp-hold")}}}).status, 429);
  // Cancelling the held job makes room.
  ASSERT_EQ(api.call("DELETE", "/ojs/v1/jobs/" + a).status, 200);
  EXPECT_EQ(raw(broker.url(), "POST", "/ojs/v1/jobs", job_in("bp-hold").dump()).status, 201);
}

TEST_F(SpecExtensions, BoundedQueueRejectsWithQueueFullAndHeaders) {
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  const auto put = api.call("PUT", "/ojs/v1/admin/queues/bp-q/config", bounded(2));
  ASSERT_EQ(put.status, 200) << put.body.dump();
  EXPECT_EQ(put.body["config"]["backpressure"]["max_depth"], 2);
  EXPECT_EQ(put.body["config"]["backpressure"]["strategy"], "reject");
  api.push(job_in("bp-q"));
  json scheduled = job_in("bp-q");
  scheduled["options"]["delay_until"] = iso_in(std::chrono::hours(1));  // scheduled jobs count in the depth
  api.push(scheduled);

  const auto full = raw(broker.url(), "POST", "/ojs/v1/jobs", job_in("bp-q").dump());
  ASSERT_EQ(full.status, 429) << full.body;
  const auto body = json::parse(full.body);
  EXPECT_EQ(body["error"]["code"], "QUEUE_FULL");
  EXPECT_EQ(body["error"]["retryable"], true);
  EXPECT_EQ(body["error"]["queue"], "bp-q");
  EXPECT_EQ(body["error"]["depth"], 2);
  EXPECT_EQ(body["error"]["bound"], 2);
  EXPECT_FALSE(header(full, "retry-after").empty());
  EXPECT_EQ(header(full, "x-ojs-queue-depth"), "2");
  EXPECT_EQ(header(full, "x-ojs-queue-bound"), "2");
  // BP-004: the refusal is an event; nothing was stored.
  const auto events = api.get("/ojs/v1/events?queues=bp-q&types=backpressure.rejected");
  ASSERT_EQ(events.status, 200) << events.body.dump();
  EXPECT_FALSE(events.body.dump().find("backpressure.rejected") == std::string::npos) << events.body.dump();
  EXPECT_EQ(api.get("/ojs/v1/queues/bp-q/stats").body.dump().find("\"available\":2"), std::string::npos);

  // A fetched job no longer waits: room for one more.
  ASSERT_EQ(api.fetch({"bp-q"}, "w1").size(), 1u);
  EXPECT_EQ(raw(broker.url(), "POST", "/ojs/v1/jobs", job_in("bp-q").dump()).status, 201);
  // 0 is unbounded again.
  ASSERT_EQ(api.call("PUT", "/ojs/v1/admin/queues/bp-q/config", bounded(0)).status, 200);
  EXPECT_EQ(raw(broker.url(), "POST", "/ojs/v1/jobs", job_in("bp-q").dump()).status, 201);
  // Malformed bounds are refused naming the field.
  auto bad = api.call("PUT", "/ojs/v1/admin/queues/bp-q/config", {{"backpressure", {{"max_depth", -1}}}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.body["error"]["details"]["field"], "backpressure.max_depth");
  bad = api.call("PUT", "/ojs/v1/admin/queues/bp-q/config", {{"backpressure", {{"strategy", "sometimes"}}}});
  EXPECT_EQ(bad.body["error"]["details"]["field"], "backpressure.strategy");
}

TEST_F(SpecExtensions, BlockStrategyWaitsForRoomUpToTheTimeout) {
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  ASSERT_EQ(api.call("PUT", "/ojs/v1/admin/queues/bp-b/config", bounded(1, "block")).status, 200);
  api.push(job_in("bp-b"));
  // No OJS-Block-Timeout: answered at once.
  const auto at_once = raw(broker.url(), "POST", "/ojs/v1/jobs", job_in("bp-b").dump());
  EXPECT_EQ(at_once.status, 429);
  EXPECT_EQ(json::parse(at_once.body)["error"]["strategy"], "block");
  // With one: held until a FETCH makes room, then stored.
  auto waiting = std::async(std::launch::async, [&] {
    return raw(broker.url(), "POST", "/ojs/v1/jobs", job_in("bp-b").dump(), {"OJS-Block-Timeout: 30"});
  });
  ASSERT_TRUE(eventually(10000, [&] { return api.get("/ojs/v1/admin/drain").body.value("in_flight", 0) >= 2; }));
  ASSERT_EQ(api.fetch({"bp-b"}, "w1").size(), 1u);
  const auto stored = waiting.get();
  EXPECT_EQ(stored.status, 201) << stored.body;
  EXPECT_EQ(raw(broker.url(), "POST", "/ojs/v1/jobs", job_in("bp-b").dump(), {"OJS-Block-Timeout: x"}).status, 400);
}

// ---- Multi-tenancy (ojs-multi-tenancy.md §10) ----

TEST_F(SpecExtensions, TenantStatsCountEachTenantsJobs) {
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  for (int i = 0; i < 3; ++i) {
    json j = job_in("mt-q");
    j["meta"] = {{"tenant_id", "acme"}};
    api.push(j);
  }
  json other = job_in("mt-q");
  other["meta"] = {{"tenant_id", "globex"}};
  api.push(other);
  ASSERT_EQ(api.fetch({"mt-q"}, "w1").size(), 1u);  // an acme job (the oldest) goes active

  const auto stats = api.get("/ojs/v1/admin/tenants/acme/stats");
  ASSERT_EQ(stats.status, 200) << stats.body.dump();
  EXPECT_EQ(stats.body["tenant_id"], "acme");
  EXPECT_EQ(stats.body["jobs"]["available"], 2);
  EXPECT_EQ(stats.body["jobs"]["active"], 1);
  EXPECT_EQ(stats.body["queues"]["mt-q"]["available"], 2);
  EXPECT_EQ(stats.body["total_jobs"], 3);
  // One queue's stats at GET /ojs/v1/queues/{name} too (ext-multi-tenancy).
  const auto queue = api.get("/ojs/v1/queues/mt-q");
  ASSERT_EQ(queue.status, 200) << queue.body.dump();
  EXPECT_EQ(queue.body["queue"]["name"], "mt-q");
  EXPECT_EQ(queue.body["queue"]["active"], 1);
  EXPECT_EQ(api.get("/ojs/v1/queues/mt-none").status, 404);
  const auto list = api.get("/ojs/v1/admin/tenants");
  ASSERT_EQ(list.status, 200);
  ASSERT_EQ(list.body["tenants"].size(), 2u) << list.body.dump();
  EXPECT_EQ(list.body["tenants"][0]["tenant_id"], "acme");
  EXPECT_EQ(list.body["tenants"][1]["tenant_id"], "globex");
  EXPECT_EQ(list.body["tenants"][1]["jobs"]["available"], 1);
  EXPECT_EQ(api.get("/ojs/v1/admin/tenants/bad%20name/stats").status, 400);
}

// ---- Progress, retry validation, NACK, heartbeat (core and level-1 cases) ----

TEST_F(SpecExtensions, ProgressMessageIsStoredAndReturned) {
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  const auto id = api.push(job_in("pg-q"));
  ASSERT_EQ(api.fetch({"pg-q"}, "w1").size(), 1u);
  const auto put = api.call("PUT", "/ojs/v1/jobs/" + id + "/progress", {{"progress", 0.5}, {"message", "halfway"}});
  ASSERT_EQ(put.status, 200) << put.body.dump();
  EXPECT_EQ(put.body["message"], "halfway");
  // A later update without a message keeps it.
  ASSERT_EQ(api.call("PUT", "/ojs/v1/jobs/" + id + "/progress", {{"progress", 0.6}}).status, 200);
  const auto got = api.get("/ojs/v1/jobs/" + id + "/progress");
  EXPECT_EQ(got.body["message"], "halfway") << got.body.dump();
  EXPECT_EQ(got.body["progress"], 0.6);
  EXPECT_EQ(api.call("PUT", "/ojs/v1/jobs/" + id + "/progress", {{"message", 7}}).body["error"]["details"]["field"], "message");
}

TEST_F(SpecExtensions, BadRetryPolicyIsAValidationError) {
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  // A well-formed value breaking a policy rule: 422 validation_error (the level-1 cases).
  for (const json& retry : {json{{"max_attempts", -1}}, json{{"max_attempts", 1000001}}, json{{"max_attempts", 18446744073709551615ULL}},
                            json{{"backoff_coefficient", 0.5}}}) {
    json job = job_in("rv-q");
    job["options"]["retry"] = retry;
    const auto r = api.post("/ojs/v1/jobs", job);
    EXPECT_EQ(r.status, 422) << retry.dump() << ": " << r.body.dump();
    EXPECT_EQ(r.body["error"]["code"], "validation_error") << r.body.dump();
    EXPECT_EQ(r.body["error"]["details"]["field"].get<std::string>().rfind("retry", 0), 0u) << r.body.dump();
  }
  // A value of the wrong type, a malformed duration or a number too large to hold is a
  // format error, as anywhere in the envelope: 400 invalid_request.
  for (const json& retry : {json{{"initial_interval", "soon"}}, json("three times"), json{{"max_attempts", 2.5}},
                            json{{"max_attempts", 1e20}}, json{{"backoff_coefficient", "2"}}}) {
    json job = job_in("rv-q");
    job["options"]["retry"] = retry;
    const auto r = api.post("/ojs/v1/jobs", job);
    EXPECT_EQ(r.status, 400) << retry.dump() << ": " << r.body.dump();
    EXPECT_EQ(r.body["error"]["code"], "invalid_request") << r.body.dump();
    EXPECT_EQ(r.body["error"]["details"]["field"].get<std::string>().rfind("retry", 0), 0u) << r.body.dump();
  }
  // Envelope format errors stay 400 invalid_request.
  EXPECT_EQ(api.post("/ojs/v1/jobs", {{"type", "Bad Type"}, {"args", json::array()}}).status, 400);
}

TEST_F(SpecExtensions, NackKeepsTheWorkersErrorTypeAndMatchesNonRetryableByIt) {
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  const auto id = api.push(job_in("nk-q", {{"max_attempts", 5}, {"non_retryable_errors", {"PaymentDeclined", "auth.*"}}}));
  ASSERT_EQ(api.fetch({"nk-q"}, "w1").size(), 1u);
  const auto nack = api.post("/ojs/v1/workers/nack",
                             {{"job_id", id}, {"error", {{"code", "handler_error"}, {"type", "PaymentDeclined"}, {"message", "card declined"}}}});
  ASSERT_EQ(nack.status, 200) << nack.body.dump();
  EXPECT_EQ(nack.body["job"]["error"]["type"], "PaymentDeclined");
  EXPECT_EQ(nack.body["state"], "discarded") << "a non-retryable type must not be retried: " << nack.body.dump();
  // A prefix entry ("auth.*") matches too.
  const auto second = api.push(job_in("nk-q", {{"max_attempts", 5}, {"non_retryable_errors", {"auth.*"}}}));
  ASSERT_EQ(api.fetch({"nk-q"}, "w1").size(), 1u);
  const auto prefixed = api.post("/ojs/v1/workers/nack", {{"job_id", second}, {"error", {{"type", "auth.expired"}, {"message", "token"}}}});
  EXPECT_EQ(prefixed.body["state"], "discarded") << prefixed.body.dump();
  EXPECT_EQ(api.get("/ojs/v1/jobs/" + second).body["job"]["error"]["type"], "auth.expired");
}

TEST_F(SpecExtensions, HeartbeatStateReflectsQuietAndTerminate) {
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  auto beat = [&](const std::string& worker, const std::string& state) {
    return api.post("/ojs/v1/workers/heartbeat", {{"worker_id", worker}, {"state", state}, {"active_jobs", 0}, {"active_job_ids", json::array()}});
  };
  EXPECT_EQ(beat("hb-1", "running").body["state"], "running");
  EXPECT_EQ(beat("hb-1", "quiet").body["state"], "quiet");        // the worker quieted itself (SIGTSTP)
  EXPECT_EQ(beat("hb-1", "terminate").body["state"], "terminate");
  EXPECT_EQ(beat("hb-1", "running").body["state"], "running");    // resumed (SIGCONT): not held quiet
  EXPECT_EQ(beat("hb-2", "running").body["state"], "running");    // in contact: directives on unknown ids are 404
  ASSERT_EQ(api.post("/ojs/v1/admin/workers/hb-2/quiet", json::object()).status, 200);
  EXPECT_EQ(beat("hb-2", "running").body["state"], "quiet");      // the broker's directive
  EXPECT_EQ(beat("hb-2", "terminate").body["state"], "terminate");  // never backward
  EXPECT_EQ(beat("hb-2", "asleep").status, 400);
}
