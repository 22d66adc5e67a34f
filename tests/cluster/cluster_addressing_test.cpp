// Against a real 6-node Redis Cluster (scripts/redis-cluster.sh): our slot maths
// agree with CLUSTER KEYSLOT, the map read from CLUSTER SLOTS sends every key to
// the master that accepts it, and a wrong node's MOVED names the right one.
#include <gtest/gtest.h>

#include "broker/store/cluster_slots.hpp"
#include "cluster/real_cluster.hpp"

namespace ojs::broker::cluster {
namespace {

TEST_F(RealCluster, KeySlotAgreesWithRedis) {
  RedisPool redis(node(base_), 1);
  std::vector<std::vector<std::string>> asks;
  std::vector<std::string> keys;
  for (int i = 0; i < 2000; ++i) {
    keys.push_back(i % 3 == 0 ? "ojs:{q" + std::to_string(i) + "}:job:" + std::to_string(i) : "key:" + std::to_string(i * 7919));
    asks.push_back({"CLUSTER", "KEYSLOT", keys.back()});
  }
  const auto replies = redis.pipeline(asks);
  for (std::size_t i = 0; i < keys.size(); ++i) ASSERT_EQ(replies[i].integer, key_slot(keys[i])) << keys[i];
}

TEST_F(RealCluster, SlotMapRoutesEveryKeyToItsMaster) {
  RedisPool seed(node(base_), 1);
  const auto map = SlotMap::from_cluster_slots(seed.command({"CLUSTER", "SLOTS"}));
  ASSERT_TRUE(map.complete());
  ASSERT_EQ(map.masters().size(), 3u);
  std::map<int, std::unique_ptr<RedisPool>> pools;
  for (const auto& m : map.masters()) pools[m.port] = std::make_unique<RedisPool>(node(m.port), 1);
  for (int i = 0; i < 300; ++i) {
    const std::string key = "ojs:{queue-" + std::to_string(i) + "}:seq";
    const NodeAddress* master = map.master_of(key_slot(key));
    ASSERT_NE(master, nullptr);
    const auto reply = pools.at(master->port)->command({"INCR", key});
    ASSERT_FALSE(reply.is_error()) << key << " on " << master->describe() << ": " << reply.str;
    // Any other master refuses it with a MOVED that names the right one.
    for (const auto& other : map.masters()) {
      if (other == *master) continue;
      const auto refused = pools.at(other.port)->command({"GET", key});
      ASSERT_TRUE(refused.is_error()) << key;
      const auto redirect = parse_redirect(refused.str);
      ASSERT_TRUE(redirect) << refused.str;
      EXPECT_EQ(redirect->kind, Redirect::Kind::moved);
      EXPECT_EQ(redirect->slot, key_slot(key));
      EXPECT_EQ(redirect->node.port, master->port);
    }
  }
}

}  // namespace
}  // namespace ojs::broker::cluster
