// What people and members are told of an elastic gang (ext_ml_gang {min_size,
// max_size}), end to end: a real redis-server and broker, workers simulated by HTTP
// calls with the example capabilities (4 x A100 hosts). The diagnosis of a waiting
// gang says it starts at min_size and may grow to max_size; of a running one, the
// size it runs at and what its growth waits on. The estimate places it at min_size.
// A member's FETCH reply carries its gangs' rendezvous (a worker in no gang's does
// not). ojsctl `why` and the status page show the sizes.
#include <gtest/gtest.h>

#include <string>

#include "ojs/client/http_client.hpp"
#include "support/gang_hosts.hpp"
#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

std::string worker(int n) { return "w" + std::to_string(n); }

json elastic_job(const std::string& queue, int min_size, int max_size) {
  return ml_job(queue, {{"ext_ml_gpu_count", 4}, {"ext_ml_gang", {{"min_size", min_size}, {"max_size", max_size}}}});
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

class ElasticGangView : public ::testing::Test {
 protected:
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};

  // The whole FETCH reply of worker n (4 x A100).
  json fetch_reply(const std::string& queue, int n) {
    const auto r = api.post("/ojs/v1/workers/fetch", {{"queues", {queue}}, {"worker_id", worker(n)}, {"count", 1},
                                                      {"capabilities", a100_host(n)["capabilities"]}});
    EXPECT_EQ(r.status, 200) << r.body.dump();
    return r.body;
  }
  json diagnosis(const std::string& id) {
    const auto r = api.get("/ojs/v1/jobs/" + id + "/diagnosis");
    EXPECT_EQ(r.status, 200) << r.body.dump();
    return r.body["diagnosis"];
  }
  RunResult ojsctl(std::vector<std::string> args) {
    std::vector<std::string> argv{binary_path("ojsctl/ojsctl"), "--url", broker.url()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_process(argv, 60);
  }
};

TEST_F(ElasticGangView, AWaitingGangStartsAtMinSizeInItsDiagnosisAndEstimate) {
  const std::string q = "elv-wait";
  for (int n = 1; n <= 3; ++n) EXPECT_EQ(fetch_reply(q, n)["jobs"].size(), 0u);  // three free workers serve the queue
  const auto id = api.push(elastic_job(q, 2, 8));

  // The estimate places it on two of them now: it starts at min_size, not at max_size.
  auto d = diagnosis(id);
  const auto& e = d["estimate"];
  ASSERT_EQ(e["status"], "estimated") << e.dump();
  EXPECT_EQ(e["worker_ids"].size(), 2u) << e.dump();
  EXPECT_EQ(e["start_in_s"], 0) << e.dump();
  EXPECT_EQ(e["gang"], json({{"start_size", 2}, {"max_size", 8}, {"elastic", true}})) << e.dump();
  EXPECT_TRUE(contains(e["rests_on"].get<std::string>(), "its gang starting with 2 members (min_size; it may grow to 8")) << e.dump();

  // One member held: it still waits for its second.
  EXPECT_EQ(fetch_reply(q, 1)["jobs"].size(), 0u);
  d = diagnosis(id);
  ASSERT_EQ(d["state"], "available");
  const auto& g = d["gang"];
  ASSERT_TRUE(g.is_object()) << d.dump();
  EXPECT_EQ(g["min_size"], 2);
  EXPECT_EQ(g["max_size"], 8);
  EXPECT_EQ(g["elastic"], true);
  EXPECT_EQ(g["size"], 1);
  EXPECT_EQ(g["generation"], 0);
  EXPECT_EQ(g["message"], "an elastic gang: it starts once 2 members are placed (min_size); may grow to 8 (max_size) while it runs");

  const auto why = ojsctl({"why", id});
  ASSERT_EQ(why.exit_code, 0) << why.output;
  EXPECT_TRUE(contains(why.output, "Gang:         1 members now, target 2 to 8 (elastic), generation 0")) << why.output;
  EXPECT_TRUE(contains(why.output, "starts once 2 members are placed (min_size)")) << why.output;
}

TEST_F(ElasticGangView, ARunningGangSaysItsSizeAndWhatItsGrowthWaitsOn) {
  const std::string q = "elv-run";
  const auto id = api.push(elastic_job(q, 2, 8));
  EXPECT_EQ(fetch_reply(q, 1)["jobs"].size(), 0u);
  EXPECT_EQ(fetch_reply(q, 2)["jobs"].size(), 1u);  // starts at 2
  EXPECT_EQ(fetch_reply(q, 3)["jobs"].size(), 1u);  // grows to 3, generation 2

  // Its own members are no reason: no other worker was seen.
  auto d = diagnosis(id);
  ASSERT_EQ(d["state"], "active");
  EXPECT_EQ(d["gang"]["size"], 3) << d.dump();
  EXPECT_EQ(d["gang"]["generation"], 2) << d.dump();
  EXPECT_EQ(d["gang"]["grow_waits_on"], "no_worker_seen") << d.dump();
  EXPECT_TRUE(contains(d["message"].get<std::string>(), "runs at 3 of up to 8 members (generation 2)")) << d.dump();

  // A higher-priority job takes the next free worker that fits a member.
  const auto urgent = api.push(ml_job(q, {{"ext_ml_gpu_count", 4}, {"priority", 50}}));
  const auto got = fetch_reply(q, 4)["jobs"];
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["id"], urgent);
  d = diagnosis(id);
  EXPECT_EQ(d["gang"]["size"], 3);
  EXPECT_EQ(d["gang"]["grow_waits_on"], "work_ahead") << d.dump();
  EXPECT_TRUE(contains(d["gang"]["message"].get<std::string>(), "work ahead of it in the queue's order")) << d.dump();

  // ojsctl why and the status page show the size it runs at and its range.
  const auto why = ojsctl({"why", id});
  ASSERT_EQ(why.exit_code, 0) << why.output;
  EXPECT_TRUE(contains(why.output, "Gang:         3 members now, target 2 to 8 (elastic), generation 2")) << why.output;
  EXPECT_TRUE(contains(why.output, "runs at 3 of up to 8 members")) << why.output;
  const auto overview = api.get("/ojs/v1/admin/overview").body;
  json gangs;
  for (const auto& queue : overview["queues"])
    if (queue["name"] == q) gangs = queue["elastic_gangs"];
  ASSERT_EQ(gangs.size(), 1u) << overview.dump();
  EXPECT_EQ(gangs[0]["job_id"], id);
  EXPECT_EQ(gangs[0]["size"], 3);
  EXPECT_EQ(gangs[0]["min_size"], 2);
  EXPECT_EQ(gangs[0]["max_size"], 8);
  ojs::HttpClientOptions options;
  options.base_url = broker.url();
  ojs::HttpClient http(options);
  const auto page = http.get("/ojs/status").body;
  EXPECT_TRUE(contains(page, "<table id=\"elastic-gangs\">")) << page.substr(0, 2000);
  const auto row = page.find("<tr data-job=\"" + id + "\">");
  ASSERT_NE(row, std::string::npos) << page;
  const auto row_html = page.substr(row, page.find("</tr>", row) - row);
  EXPECT_TRUE(contains(row_html, "<td class=\"n\">3</td>")) << row_html;
  EXPECT_TRUE(contains(row_html, "2 &ndash; 8")) << row_html;
}

TEST_F(ElasticGangView, AMembersFetchReplyCarriesItsGangsAndANonMembersDoesNot) {
  const std::string q = "elv-fetch";
  const auto id = api.push(elastic_job(q, 2, 4));
  EXPECT_EQ(fetch_reply(q, 1)["jobs"].size(), 0u);  // held
  EXPECT_EQ(fetch_reply(q, 2)["jobs"].size(), 1u);  // starts at 2

  // The held member's FETCH delivers the job and, beside it, the gang as the heartbeat tells it.
  auto reply = fetch_reply(q, 1);
  ASSERT_EQ(reply["jobs"].size(), 1u) << reply.dump();
  ASSERT_EQ(reply["gangs"].size(), 1u) << reply.dump();
  EXPECT_EQ(reply["gangs"][0]["job_id"], id);
  EXPECT_EQ(reply["gangs"][0]["ext_ml_gang_rank"], 0);
  EXPECT_EQ(reply["gangs"][0]["ext_ml_gang_world_size"], 2);
  EXPECT_EQ(reply["gangs"][0]["ext_ml_gang_generation"], 1);

  // The gang grows by a third worker: a member that FETCHes (and gets no new job) learns it.
  EXPECT_EQ(fetch_reply(q, 3)["jobs"].size(), 1u);
  reply = fetch_reply(q, 1);
  EXPECT_EQ(reply["jobs"].size(), 0u) << reply.dump();
  ASSERT_EQ(reply["gangs"].size(), 1u) << reply.dump();
  const auto& g = reply["gangs"][0];
  EXPECT_EQ(g["ext_ml_gang_world_size"], 3);
  EXPECT_EQ(g["ext_ml_gang_generation"], 2);
  EXPECT_EQ(g["ext_ml_gang_master_addr"], "10.0.0.1");
  EXPECT_EQ(g["ext_ml_gang_workers"], json({"w1", "w2", "w3"}));
  // The same shape as the heartbeat's.
  const auto beat = api.post("/ojs/v1/workers/heartbeat", {{"worker_id", worker(1)}, {"active_jobs", {id}}}).body;
  ASSERT_EQ(beat["gangs"].size(), 1u) << beat.dump();
  EXPECT_EQ(beat["gangs"][0], g);

  // A worker in no gang is told nothing of gangs.
  reply = fetch_reply("elv-other", 9);
  EXPECT_FALSE(reply.contains("gangs")) << reply.dump();
}

TEST_F(ElasticGangView, ARunningGangsGrowthNamesTheBusyWorkerExpectedToFreeFirst) {
  const std::string q = "elv-next";
  const auto id = api.push(elastic_job(q, 2, 8));
  EXPECT_EQ(fetch_reply(q, 1)["jobs"].size(), 0u);
  EXPECT_EQ(fetch_reply(q, 2)["jobs"].size(), 1u);  // starts at 2
  // Two jobs ahead of its growth take the other workers whole: one declares 600 s, the other an hour.
  const auto soon = api.push(ml_job(q, {{"ext_ml_gpu_count", 4}, {"priority", 50}, {"ext_ml_estimated_duration_seconds", 600}}));
  const auto late = api.push(ml_job(q, {{"ext_ml_gpu_count", 4}, {"priority", 50}, {"ext_ml_estimated_duration_seconds", 3600}}));
  auto got = fetch_reply(q, 3)["jobs"];
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(got[0]["id"], soon);
  got = fetch_reply(q, 4)["jobs"];
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(got[0]["id"], late);
  // Both FETCH again, busy: neither fits a member now.
  EXPECT_EQ(fetch_reply(q, 3)["jobs"].size(), 0u);
  EXPECT_EQ(fetch_reply(q, 4)["jobs"].size(), 0u);

  const auto d = diagnosis(id);
  ASSERT_EQ(d["state"], "active") << d.dump();
  EXPECT_EQ(d["gang"]["size"], 2) << d.dump();
  EXPECT_EQ(d["gang"]["grow_waits_on"], "no_eligible_worker") << d.dump();
  const auto& next = d["gang"]["grows_next"];
  ASSERT_TRUE(next.is_object()) << d.dump();
  EXPECT_EQ(next["worker_id"], worker(3)) << d.dump();
  EXPECT_EQ(next["job_id"], soon) << d.dump();
  EXPECT_TRUE(next["at"].is_string()) << d.dump();
  EXPECT_TRUE(contains(d["gang"]["message"].get<std::string>(), "the first expected to free: worker w3 at ")) << d.dump();
  EXPECT_TRUE(contains(d["message"].get<std::string>(), "(job " + soon + "'s declared end)")) << d.dump();
}
