// PUSH under an Idempotency-Key (ojs-bulk-operations.md §10): a
// client that retries after a timeout or a lost reply gets the job its first request
// stored, never a second one.
#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "ojs/client/http_client.hpp"
#include "ojs/core/digest.hpp"
#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"
#include "support/role_tokens.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

struct Sent {
  long status;
  json body;
  std::map<std::string, std::string> headers;
};

Sent push_with_key(const std::string& url, const std::string& token, const json& job, const std::string& key,
                   const std::string& path = "/ojs/v1/jobs") {
  ojs::HttpClient client({url, token});
  const auto r = client.request("POST", path, job.dump(), {"Content-Type: application/json", "Idempotency-Key: " + key});
  return {r.status, json::parse(r.body, nullptr, false), r.headers};
}

long available(Api& api, const std::string& queue) {
  return api.get("/ojs/v1/admin/jobs?queue=" + queue + "&state=available").body["pagination"]["total"].get<long>();
}

}  // namespace

class IdempotentPush : public ::testing::Test, protected RoleTokenBroker {
 protected:
  IdempotentPush() : RoleTokenBroker("idempotent_push") {}
};

TEST_F(IdempotentPush, ARetryGetsTheFirstRequestsJob) {
  const json job = job_in("idem-q");
  const auto first = push_with_key(broker.url(), "team-a-token", job, "order-1");
  ASSERT_EQ(first.status, 201) << first.body.dump();
  const auto id = first.body["job"]["id"].get<std::string>();
  EXPECT_EQ(first.headers.count("idempotent-replayed"), 0u);

  // The same request, members in another order and spaced differently: the same job.
  const json reordered = json::parse(R"({ "options": {"queue": "idem-q"}, "args": [], "type": "t" })");
  const auto retry = push_with_key(broker.url(), "team-a-token", reordered, "order-1");
  ASSERT_EQ(retry.status, 201) << retry.body.dump();
  EXPECT_EQ(retry.body["job"]["id"], id);
  EXPECT_EQ(retry.headers.at("idempotent-replayed"), "true");
  EXPECT_EQ(retry.headers.at("location"), "/ojs/v1/jobs/" + id);
  EXPECT_EQ(available(admin, "idem-q"), 1);

  // Another body under the key: 409 naming the header, nothing stored.
  json other = job_in("idem-q");
  other["args"] = {1};
  const auto misuse = push_with_key(broker.url(), "team-a-token", other, "order-1");
  EXPECT_EQ(misuse.status, 409) << misuse.body.dump();
  EXPECT_EQ(misuse.body["error"]["details"]["field"], "Idempotency-Key");
  EXPECT_EQ(available(admin, "idem-q"), 1);

  // Keys are per tenant: team-b's "order-1" is its own request.
  const auto b = push_with_key(broker.url(), "team-b-token", job, "order-1");
  ASSERT_EQ(b.status, 201) << b.body.dump();
  EXPECT_NE(b.body["job"]["id"], id);
  EXPECT_EQ(b.headers.count("idempotent-replayed"), 0u);
}

TEST_F(IdempotentPush, ARefusedPushGivesTheKeyBack) {
  json bad = job_in("idem-refused");
  bad["type"] = "Not A Type";
  const auto refused = push_with_key(broker.url(), "team-a-token", bad, "fix-and-retry");
  ASSERT_EQ(refused.status, 400) << refused.body.dump();
  // The corrected request under the same key is a first request, not a misuse.
  const auto fixed = push_with_key(broker.url(), "team-a-token", job_in("idem-refused"), "fix-and-retry");
  EXPECT_EQ(fixed.status, 201) << fixed.body.dump();
  EXPECT_EQ(fixed.headers.count("idempotent-replayed"), 0u);
}

TEST_F(IdempotentPush, AKeyWhoseFirstPushNeverLandedStoresItOnceUnderItsId) {
  // What a 504 leaves when the write never reached Redis: the key's record, no job.
  const json job = job_in("idem-lost");
  const std::string lost_id = "01900000-0000-7000-8000-000000000001";
  const auto scope = ojs::sha256_hex("push\nteam-a\nlost-reply");
  redis_lines(redis, {"SET", "ojs:{_global}:idempotency:" + scope, ojs::sha256_hex(job.dump()) + " " + lost_id, "EX", "600"});
  const auto retry = push_with_key(broker.url(), "team-a-token", job, "lost-reply");
  ASSERT_EQ(retry.status, 201) << retry.body.dump();
  EXPECT_EQ(retry.body["job"]["id"], lost_id);
  EXPECT_EQ(available(admin, "idem-lost"), 1);
}

TEST_F(IdempotentPush, ConcurrentRetriesStoreOneJob) {
  const json job = job_in("idem-race");
  std::vector<Sent> replies(8);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < replies.size(); ++i)
    threads.emplace_back([&, i] { replies[i] = push_with_key(broker.url(), "team-a-token", job, "burst"); });
  for (auto& t : threads) t.join();
  std::set<std::string> ids;
  for (const auto& r : replies) {
    ASSERT_EQ(r.status, 201) << r.body.dump();
    ids.insert(r.body["job"]["id"].get<std::string>());
  }
  EXPECT_EQ(ids.size(), 1u);
  EXPECT_EQ(available(admin, "idem-race"), 1);
}

TEST_F(IdempotentPush, TheKeyIsChecked) {
  for (const std::string key : {std::string(257, 'k'), std::string("tab\there")}) {
    const auto r = push_with_key(broker.url(), "team-a-token", job_in("idem-key"), key);
    EXPECT_EQ(r.status, 400) << r.body.dump();
    EXPECT_EQ(r.body["error"]["details"]["field"], "Idempotency-Key") << r.body.dump();
  }
  EXPECT_EQ(available(admin, "idem-key"), 0);
}

TEST_F(IdempotentPush, ABatchRetryGetsTheFirstBatchsJobs) {
  const json batch = {{"jobs", {job_in("idem-batch"), job_in("idem-batch"), job_in("idem-batch")}}};
  const auto first = push_with_key(broker.url(), "team-a-token", batch, "import-42", "/ojs/v1/jobs/batch");
  ASSERT_EQ(first.status, 201) << first.body.dump();
  ASSERT_EQ(first.body["count"], 3);
  const auto retry = push_with_key(broker.url(), "team-a-token", batch, "import-42", "/ojs/v1/jobs/batch");
  ASSERT_EQ(retry.status, 201) << retry.body.dump();
  EXPECT_EQ(retry.headers.at("idempotent-replayed"), "true");
  ASSERT_EQ(retry.body["count"], 3);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(retry.body["jobs"][i]["id"], first.body["jobs"][i]["id"]);
  EXPECT_EQ(available(admin, "idem-batch"), 3);
  // Keys are per operation (§10.2): the same key on a single PUSH is its own request.
  EXPECT_EQ(push_with_key(broker.url(), "team-a-token", job_in("idem-batch"), "import-42").headers.count("idempotent-replayed"), 0u);
  // Another batch under the key: 409.
  const json other = {{"jobs", {job_in("idem-batch")}}};
  EXPECT_EQ(push_with_key(broker.url(), "team-a-token", other, "import-42", "/ojs/v1/jobs/batch").status, 409);
  EXPECT_EQ(available(admin, "idem-batch"), 4);
}
