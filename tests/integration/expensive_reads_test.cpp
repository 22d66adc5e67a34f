// Reads whose cost grows with the data (diagnoses, estimates, logs, listings) get a
// bounded share of the handler threads (--expensive-reads): beyond it they answer 503
// with a reason and Retry-After at once, and health, readiness and FETCH are served
// while the share is taken. A gate between broker and Redis holds one log read, so
// the share is taken for as long as the test wants, without timing.
#include <gtest/gtest.h>

#include <future>

#include "support/processes.hpp"
#include "support/redis_gate.hpp"

using nlohmann::json;
using namespace ojs::test;

TEST(ExpensiveReads, BeyondTheShareAnswer503WhileHealthAndFetchGoOn) {
  RedisServer redis;
  RedisGate gate{redis.port()};
  BrokerProcess broker{gate.url(), {"--expensive-reads", "1", "--handler-threads", "4"}};
  Api api{broker.url()};
  const auto id = api.push({{"type", "t"}, {"args", json::array()}, {"options", {{"queue", "xr"}}}});

  gate.hold("XRANGE");  // the first log read's page stays unsent until released
  auto slow = std::async(std::launch::async, [&] {
    Api reader{broker.url()};
    return reader.get("/ojs/v1/jobs/" + id + "/logs");
  });
  ASSERT_TRUE(gate.wait_held(30000)) << "the log read never reached Redis";

  // The share is taken: more expensive reads are turned away at once.
  for (const std::string path : {"/ojs/v1/jobs/" + id + "/logs", "/ojs/v1/jobs/" + id + "/diagnosis",
                                 std::string("/ojs/v1/admin/jobs?queue=xr")}) {
    const auto r = api.get(path);
    EXPECT_EQ(r.status, 503) << path << " " << r.body.dump();
    EXPECT_EQ(r.body["error"]["details"]["reason"], "busy") << r.body.dump();
    EXPECT_EQ(r.body["error"]["details"]["retry_after_s"], 1);
  }
  // Everything else goes on meanwhile.
  EXPECT_EQ(api.get("/ojs/v1/health").status, 200);
  EXPECT_EQ(api.get("/ojs/v1/ready").status, 200);
  EXPECT_EQ(api.get("/ojs/v1/jobs/" + id).status, 200);
  const auto other = api.push({{"type", "t"}, {"args", json::array()}, {"options", {{"queue", "xr-fetch"}}}});
  const auto got = api.fetch({"xr-fetch"}, "w1");
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["id"], other);

  gate.release();
  EXPECT_EQ(slow.get().status, 200);
  // The share is free again.
  EXPECT_EQ(api.get("/ojs/v1/jobs/" + id + "/diagnosis").status, 200);
}
