// Access control end to end: bearer tokens and roles (401/403 where a role does
// not belong), admin-only label keys, PUSH rate limit (429 + Retry-After),
// anonymous mode refused off loopback, TLS round trip, ojsctl with a token.
#include <gtest/gtest.h>

#include <fstream>

#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

std::string sha256(const std::string& token) {
  auto r = run_process({"sh", "-c", "printf %s '" + token + "' | sha256sum"}, 10);
  return r.output.substr(0, 64);
}

// A token file with one token per role; returns its path.
std::string write_token_file(const std::string& dir) {
  const json entries = json::array({{{"name", "team-a"}, {"roles", {"producer"}}, {"sha256", sha256("producer-token")}},
                                    {{"name", "gpu-node"}, {"roles", {"worker"}}, {"sha256", sha256("worker-token")}},
                                    {{"name", "ops"}, {"role", "admin"}, {"sha256", sha256("admin-token")}}});
  const std::string path = dir + "/tokens.json";
  std::ofstream(path) << entries.dump(2);
  return path;
}

json job(const std::string& queue, json attrs = json::object()) {
  json j = {{"type", "ml.task"}, {"args", json::array()}, {"options", {{"queue", queue}}}};
  for (auto it = attrs.begin(); it != attrs.end(); ++it) j[it.key()] = it.value();
  return j;
}

}  // namespace

class Auth : public ::testing::Test {
 protected:
  std::string dir = make_temp_dir("auth");
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--auth-file", write_token_file(dir), "--admin-label-prefix", "node.ojs.io/",
                                     "--push-rate", "5", "--push-burst", "20"}};
  Api anonymous{broker.url()};
  Api producer{broker.url(), "producer-token"};
  Api worker{broker.url(), "worker-token"};
  Api admin{broker.url(), "admin-token"};
};

TEST_F(Auth, EveryRoleIsRefusedWhereItDoesNotBelong) {
  EXPECT_EQ(anonymous.get("/ojs/v1/health").status, 200);  // public
  EXPECT_EQ(anonymous.post("/ojs/v1/jobs", job("auth-q")).status, 401);
  EXPECT_EQ(Api(broker.url(), "wrong-token").post("/ojs/v1/jobs", job("auth-q")).status, 401);

  const auto id = producer.push(job("auth-q"));
  EXPECT_EQ(producer.get("/ojs/v1/jobs/" + id).status, 200);
  EXPECT_EQ(producer.get("/ojs/v1/jobs/" + id + "/diagnosis").status, 200);
  EXPECT_EQ(producer.get("/ojs/v1/events").status, 200);
  const auto meta = producer.get("/ojs/v1/jobs/" + id).body["job"];
  const std::vector<std::pair<std::string, std::string>> producer_refused = {
      {"POST", "/ojs/v1/workers/fetch"},  {"POST", "/ojs/v1/workers/ack"},      {"POST", "/ojs/v1/workers/heartbeat"},
      {"GET", "/ojs/v1/admin/workers"},   {"PUT", "/ojs/v1/admin/queues/auth-q/config"}, {"GET", "/ojs/v1/admin/queues/auth-q/budget"},
      {"POST", "/ojs/v1/queues/auth-q/pause"}, {"GET", "/ojs/v1/dead-letter"}};
  for (const auto& [method, path] : producer_refused) {
    auto r = producer.call(method, path, json::object());
    EXPECT_EQ(r.status, 403) << method << " " << path;
    EXPECT_EQ(r.body["error"]["code"], "forbidden");
  }

  auto fetched = worker.fetch({"auth-q"}, "gpu-node-1");
  ASSERT_EQ(fetched.size(), 1u);
  EXPECT_EQ(worker.get("/ojs/v1/jobs/" + id).status, 200);
  EXPECT_EQ(worker.post("/ojs/v1/workers/heartbeat", {{"worker_id", "gpu-node-1"}, {"active_jobs", {id}}}).status, 200);
  EXPECT_EQ(worker.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "gpu-node-1"}}).status, 200);
  const std::vector<std::pair<std::string, std::string>> worker_refused = {
      {"POST", "/ojs/v1/jobs"}, {"DELETE", "/ojs/v1/jobs/" + id}, {"GET", "/ojs/v1/admin/workers"},
      {"GET", "/ojs/v1/admin/queues/auth-q/config"}, {"POST", "/ojs/v1/admin/queues/auth-q/reconcile"}};
  for (const auto& [method, path] : worker_refused)
    EXPECT_EQ(worker.call(method, path, method == "POST" ? job("auth-q") : json(nullptr)).status, 403) << method << " " << path;

  EXPECT_EQ(admin.call("PUT", "/ojs/v1/admin/queues/auth-q/config", {{"budgets", {{"max_total_gpus", 4}}}}).status, 200);
  EXPECT_EQ(admin.get("/ojs/v1/admin/workers").status, 200);
  EXPECT_EQ(admin.get("/ojs/v1/admin/queues/auth-q/reconcile").status, 200);
  EXPECT_EQ(admin.post("/ojs/v1/jobs", job("auth-q")).status, 201);

  // Without meta.tenant_id, the token's name is the job's tenant.
  EXPECT_FALSE(meta.contains("meta") && meta["meta"].contains("tenant_id"));
  const auto listing = admin.get("/ojs/v1/admin/queues/auth-q/jobs?state=available");
  ASSERT_EQ(listing.body["jobs"].size(), 1u) << listing.body.dump();
  EXPECT_EQ(listing.body["jobs"][0]["tenant"], "ops");
}

TEST_F(Auth, AdminOnlyLabelKeys) {
  const json selector = {{"ext_ml_node_selector", {{"node.ojs.io/pool", "reserved"}}}};
  auto r = producer.post("/ojs/v1/jobs", job("auth-l", selector));
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(r.body["error"]["details"]["key"], "node.ojs.io/pool");
  r = producer.post("/ojs/v1/jobs", job("auth-l", {{"ext_ml_affinity", {{"required", {{{"key", "node.ojs.io/tier"}, {"operator", "Exists"}}}}}}}));
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(producer.post("/ojs/v1/jobs", job("auth-l", {{"ext_ml_node_selector", {{"region", "eu"}}}})).status, 201);
  EXPECT_EQ(admin.post("/ojs/v1/jobs", job("auth-l", selector)).status, 201);
}

TEST_F(Auth, PushIsRateLimitedPerIdentity) {
  ojs::HttpClient client({broker.url(), "producer-token", 30000, "", false});
  int accepted = 0;
  ojs::HttpResponse refused;
  for (int i = 0; i < 40 && refused.status == 0; ++i) {
    auto r = client.post("/ojs/v1/jobs", job("auth-r").dump());
    if (r.status == 201) ++accepted;
    else refused = r;
  }
  EXPECT_EQ(refused.status, 429) << refused.body;
  EXPECT_GE(accepted, 20);
  EXPECT_LE(accepted, 25);
  EXPECT_EQ(refused.headers["retry-after"], "1");
  EXPECT_EQ(admin.post("/ojs/v1/jobs", job("auth-r")).status, 201);  // another identity has its own bucket
}

TEST_F(Auth, BatchPushTakesOneRateTokenPerJob) {
  const auto batch = [](int n) {
    json jobs = json::array();
    for (int i = 0; i < n; ++i) jobs.push_back(job("auth-b"));
    return json{{"jobs", jobs}};
  };
  auto r = producer.post("/ojs/v1/jobs/batch", batch(21));  // beyond the burst of 20: never admissible
  EXPECT_EQ(r.status, 429) << r.body.dump();
  EXPECT_EQ(r.body["error"]["details"]["field"], "jobs");
  EXPECT_EQ(producer.post("/ojs/v1/jobs/batch", batch(15)).status, 201);
  r = producer.post("/ojs/v1/jobs/batch", batch(15));  // about 5 tokens left: refused whole, nothing taken
  EXPECT_EQ(r.status, 429) << r.body.dump();
  EXPECT_EQ(admin.get("/ojs/v1/queues/auth-b/stats").body["stats"]["available"], 15) << "nothing of the refused batch enqueued";
  EXPECT_EQ(producer.post("/ojs/v1/jobs", job("auth-b")).status, 201);  // the refused batch took no tokens
}

TEST_F(Auth, OjsctlSendsItsToken) {
  auto ok = run_process({binary_path("ojsctl/ojsctl"), "--url", broker.url(), "--token", "admin-token", "queue", "budget", "auth-c"}, 30);
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  auto refused = run_process({binary_path("ojsctl/ojsctl"), "--url", broker.url(), "--token", "producer-token", "workers", "list"}, 30);
  EXPECT_EQ(refused.exit_code, 6);  // 403 (docs/operations.md, ojsctl exit status)
  EXPECT_NE(refused.output.find("HTTP 403"), std::string::npos) << refused.output;
}

TEST(AuthStartup, AnonymousBrokerRefusesNonLoopbackUnlessAllowed) {
  RedisServer redis;
  auto r = run_process({binary_path("broker/broker"), "--redis", redis.url(), "--listen", "0.0.0.0", "--port", "0"}, 20);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("--allow-anonymous"), std::string::npos) << r.output;
  BrokerProcess allowed{redis.url(), {"--listen", "0.0.0.0", "--allow-anonymous"}};
  EXPECT_EQ(Api(allowed.url()).get("/ojs/v1/health").status, 200);
}

TEST(AuthTls, HttpsRoundTripWithASelfSignedCertificate) {
  const std::string dir = make_temp_dir("tls");
  auto gen = run_process({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                          "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", dir + "/key.pem", "-out", dir + "/cert.pem"},
                         60);
  ASSERT_EQ(gen.exit_code, 0) << gen.output;
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--tls-cert", dir + "/cert.pem", "--tls-key", dir + "/key.pem"}};
  const std::string https = "https://127.0.0.1:" + std::to_string(broker.port());
  ojs::HttpClient client({https, "", 10000, dir + "/cert.pem", false});
  auto health = client.get("/ojs/v1/health");
  EXPECT_EQ(health.status, 200) << health.transport_error;
  auto pushed = client.post("/ojs/v1/jobs", job("tls-q").dump());
  EXPECT_EQ(pushed.status, 201) << pushed.body;
  auto again = client.get("/ojs/v1/queues/tls-q/stats");  // the kept-alive TLS connection is reused
  EXPECT_EQ(again.status, 200);
  ojs::HttpClient untrusted({https, "", 10000, "", false});
  EXPECT_EQ(untrusted.get("/ojs/v1/health").status, 0);  // unknown CA: refused by the client
  ojs::HttpClient plain({broker.url(), "", 10000, "", false});
  EXPECT_NE(plain.get("/ojs/v1/health").status, 200);  // no plain HTTP on a TLS port
  auto cli = run_process({binary_path("ojsctl/ojsctl"), "--url", https, "--ca-file", dir + "/cert.pem", "jobs", "list", "tls-q"}, 30);
  EXPECT_EQ(cli.exit_code, 0) << cli.output;
  EXPECT_NE(cli.output.find("available"), std::string::npos) << cli.output;
}
