// RedisHealth on a real master and replica: the replica count the broker's startup
// check for --redis-replica-acks reads (broker/app.cpp warns when it is short).
#include <gtest/gtest.h>

#include "broker/store/redis_client.hpp"
#include "broker/store/redis_health.hpp"
#include "support/processes.hpp"

using namespace ojs::test;

TEST(RedisHealth, CountsTheReplicasConnectedToTheMaster) {
  RedisServer master, replica;
  ojs::broker::RedisPool pool(ojs::broker::parse_redis_url(master.url()), 1);
  ojs::broker::RedisHealth health(pool);
  EXPECT_EQ(health.connected_replicas(), 0);
  redis_lines(replica, {"REPLICAOF", "127.0.0.1", std::to_string(master.port())});
  EXPECT_TRUE(wait_until([&] { return health.connected_replicas() == 1; }, 30));
}
