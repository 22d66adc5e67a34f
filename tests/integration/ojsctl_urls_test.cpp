// ojsctl puts ids and names into URLs as one escaped path segment or query value:
// an id like "../admin/queues/Q" names no job (404, exit 4) and deletes nothing.
#include <gtest/gtest.h>

#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

TEST(OjsctlUrls, AnIdIsOneSegmentNeverAPath) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  // An empty queue that exists: what DELETE /admin/queues/{name} would remove.
  ASSERT_EQ(api.post("/ojs/v1/queues/ctl-victim/pause", json::object()).status, 200);
  ASSERT_EQ(api.get("/ojs/v1/admin/queues/ctl-victim").status, 200);

  for (const std::string verb : {"cancel", "hold", "release", "retry"}) {
    const auto r = run_process({binary_path("ojsctl/ojsctl"), "--url", broker.url(), verb, "../admin/queues/ctl-victim"}, 60);
    EXPECT_EQ(r.exit_code, 4) << verb << ": " << r.output;
  }
  const auto logs = run_process({binary_path("ojsctl/ojsctl"), "--url", broker.url(), "logs", "../../admin/queues/ctl-victim"}, 60);
  EXPECT_NE(logs.exit_code, 0) << logs.output;
  EXPECT_EQ(api.get("/ojs/v1/admin/queues/ctl-victim").status, 200) << "the queue was deleted through a job id";
}
