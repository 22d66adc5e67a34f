// Hostile use of cron, batch, unique PUSH, queue config and the embedded Redis
// (issue 26, items 2, 4, 10, 11, 12, 14, 15, 16, 18). Each test reproduces a
// defect found on de2fafa. Real redis-server, real broker, HTTP over loopback.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <set>
#include <thread>

#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

// Two tenant-pinned producers, a worker and an admin; returns the file's path.
std::string write_tenant_tokens(const std::string& dir) {
  const json entries = json::array({
      {{"name", "team-a"}, {"roles", {"producer"}}, {"sha256", token_sha256("a-token")}, {"tenant", "team-a"}},
      {{"name", "team-b"}, {"roles", {"producer"}}, {"sha256", token_sha256("b-token")}, {"tenant", "team-b"}},
      {{"name", "gpu-node"}, {"roles", {"worker"}}, {"sha256", token_sha256("worker-token")}},
      {{"name", "ops"}, {"role", "admin"}, {"sha256", token_sha256("admin-token")}},
  });
  const std::string path = dir + "/tokens.json";
  std::ofstream(path) << entries.dump(2);
  return path;
}

json cron(const std::string& name, const std::string& expr, const std::string& queue, json extra = json::object()) {
  json body = {{"name", name}, {"cron", expr}, {"type", "cron.tick"}, {"args", json::array({"secret-arg"})},
               {"options", {{"queue", queue}}}};
  body.update(extra);
  return body;
}

json job(const std::string& queue, json extra = json::object()) {
  json j = {{"type", "h3.task"}, {"args", json::array()}, {"options", {{"queue", queue}}}};
  j.update(extra);
  return j;
}

long long hlen(const RedisServer& redis, const std::string& key) {
  const auto lines = redis_lines(redis, {"HLEN", key});
  return lines.empty() ? -1 : std::stoll(lines[0]);
}

const std::string kJobDirectory = "ojs:{_global}:job-queue";
const std::string kQueueDirectory = "ojs:{_global}:queues";

}  // namespace

class HardeningCronBatch : public ::testing::Test {
 protected:
  RedisServer redis;
};

// #15: "@every" with a huge duration overflowed (next_run_at in year -292275027).
TEST_F(HardeningCronBatch, EveryDurationsAreBounded) {
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  for (const std::string expr : {"@every 999999999h", "@every 999999999h999999999h999999999h999999999h999999999h",
                                 "@every 876001h"}) {
    const auto r = api.post("/ojs/v1/cron", cron("huge", expr, "h3-every"));
    EXPECT_EQ(r.status, 400) << expr << ": " << r.body.dump();
    EXPECT_EQ(r.body["error"]["details"]["field"], "cron") << expr;
    EXPECT_NE(r.body["error"]["message"].get<std::string>().find("100 years"), std::string::npos) << r.body.dump();
  }
  const auto ok = api.post("/ojs/v1/cron", cron("long", "@every 876000h", "h3-every"));
  ASSERT_EQ(ok.status, 201) << ok.body.dump();
  EXPECT_EQ(ok.body["cron"]["next_run_at"].get<std::string>().substr(0, 2), "21") << ok.body.dump();
  EXPECT_TRUE(api.get("/ojs/v1/cron/huge").status == 404);
}
