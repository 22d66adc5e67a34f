// Against a real 6-node Redis Cluster (scripts/redis-cluster.sh): our slot maths
// agree with CLUSTER KEYSLOT, the map read from CLUSTER SLOTS sends every key to
// the master that accepts it, and a wrong node's MOVED names the right one.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <random>

#include "broker/store/cluster_slots.hpp"
#include "support/processes.hpp"

namespace ojs::broker::cluster {
namespace {

bool port_free(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  return ok;
}

// Six client ports and their cluster-bus ports (+10000), all free.
int free_base_port() {
  std::mt19937 rng(std::random_device{}());
  for (int attempt = 0; attempt < 200; ++attempt) {
    const int base = 20000 + static_cast<int>(rng() % 20000);
    bool ok = true;
    for (int i = 0; i < 6 && ok; ++i) ok = port_free(base + i) && port_free(base + i + 10000);
    if (ok) return base;
  }
  throw std::runtime_error("no six consecutive free ports found");
}

class RealCluster : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = test::make_temp_dir("cluster");
    base_ = free_base_port();
    const auto r = test::run_process({std::string(OJS_SOURCE_DIR) + "/scripts/redis-cluster.sh", "start", dir_, std::to_string(base_)}, 120);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  static void TearDownTestSuite() {
    test::run_process({std::string(OJS_SOURCE_DIR) + "/scripts/redis-cluster.sh", "stop", dir_}, 60);
  }
  static RedisEndpoint node(int port) {
    RedisEndpoint ep;
    ep.port = port;
    return ep;
  }
  static inline std::string dir_;
  static inline int base_ = 0;
};

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
