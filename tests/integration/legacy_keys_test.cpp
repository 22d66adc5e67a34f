// An upgraded broker finds what a broker of the pre-cluster key layout wrote: its
// global keys (ojs:job-queue, ojs:queues, ojs:cron, ojs:cron:state:<name> ...)
// move to their {_global} names at start (broker/store/legacy_keys.cpp).
#include <gtest/gtest.h>

#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

std::string redis_cli(const RedisServer& redis, std::vector<std::string> argv) {
  argv.insert(argv.begin(), {"redis-cli", "-p", std::to_string(redis.port())});
  return run_process(argv, 10).output;
}

}  // namespace

TEST(LegacyKeys, ABrokerUpgradedFromThePreClusterLayoutKeepsJobsQueuesAndCrons) {
  RedisServer redis;
  std::string id;
  {
    BrokerProcess broker{redis.url()};
    Api api{broker.url()};
    id = api.push(job_in("legacy-q"));
    const json cron = {{"name", "nightly"}, {"cron", "0 3 * * *"}, {"type", "cron.tick"}, {"args", json::array()},
                       {"options", {{"queue", "legacy-q"}}}};
    ASSERT_EQ(api.post("/ojs/v1/cron", cron).status, 201);
    broker.stop();
  }
  // Put the global keys back under the names the previous layout gave them.
  const std::vector<std::pair<std::string, std::string>> renames = {
      {"ojs:{_global}:job-queue", "ojs:job-queue"},
      {"ojs:{_global}:queues", "ojs:queues"},
      {"ojs:{_global}:cron", "ojs:cron"},
      {"ojs:{_global}:cron:state:nightly", "ojs:cron:state:nightly"}};
  for (const auto& [now, before] : renames) ASSERT_EQ(redis_cli(redis, {"RENAME", now, before}), "OK\n") << now;

  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  const auto job = api.get("/ojs/v1/jobs/" + id);
  EXPECT_EQ(job.status, 200) << job.body.dump();
  EXPECT_EQ(job.body["job"]["state"], "available");
  EXPECT_EQ(api.get("/ojs/v1/queues").body["queues"][0]["name"], "legacy-q");
  const auto cron = api.get("/ojs/v1/cron/nightly");
  EXPECT_EQ(cron.status, 200) << cron.body.dump();
  EXPECT_TRUE(cron.body["cron"]["next_run_at"].is_string()) << "the cron state moved too: " << cron.body.dump();
  for (const auto& [now, before] : renames) EXPECT_EQ(redis_cli(redis, {"EXISTS", before}), "0\n") << before << " was not moved";
  ASSERT_EQ(api.fetch({"legacy-q"}, "upgraded-worker").size(), 1u);
}
