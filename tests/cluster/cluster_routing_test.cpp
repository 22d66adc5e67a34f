// The routing client (cluster_client.hpp) against a real 6-node Redis Cluster:
// pipelines split by node come back in order, scripts load on the master that
// lacks them, a moved slot (MOVED) and a slot in migration (ASK) are followed,
// a cross-slot call is refused before it is sent, and a SIGKILLed master is
// waited out until its replica takes over.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <set>
#include <thread>

#include "broker/store/cluster_client.hpp"
#include "cluster/real_cluster.hpp"

namespace ojs::broker::cluster {
namespace {

class ClusterRouting : public RealCluster {
 protected:
  static RedisPool direct(int port) { return RedisPool(node(port), 1); }
  static std::string id_of(int port) { return RedisPool(node(port), 1).command({"CLUSTER", "MYID"}).str; }
  // From the first node that answers (a test may have killed one).
  static SlotMap current_map() {
    for (int i = 0;; ++i) {
      try {
        return SlotMap::from_cluster_slots(RedisPool(node(base_ + i), 1).command({"CLUSTER", "SLOTS"}));
      } catch (const StoreUnavailable&) {
        if (i == 5) throw;
      }
    }
  }
};

TEST_F(ClusterRouting, PipelineOverEveryMasterKeepsTheOrder) {
  RedisPool redis(parse_redis_url(seeds()), 2);
  std::vector<std::vector<std::string>> writes, reads;
  for (int i = 0; i < 300; ++i) {
    writes.push_back({"SET", "route:{q" + std::to_string(i) + "}:v", std::to_string(i * 3)});
    reads.push_back({"GET", "route:{q" + std::to_string(i) + "}:v"});
  }
  for (const auto& r : redis.pipeline(writes)) ASSERT_EQ(r.str, "OK");
  const auto replies = redis.pipeline(reads);
  ASSERT_EQ(replies.size(), reads.size());
  for (int i = 0; i < 300; ++i) EXPECT_EQ(replies[i].str, std::to_string(i * 3)) << reads[i][1];
  // Each key is where the cluster says, not all on one node.
  const auto map = current_map();
  std::set<int> ports;
  for (const auto& r : reads) ports.insert(map.master_of(key_slot(r[1]))->port);
  EXPECT_EQ(ports.size(), 3u);
}

TEST_F(ClusterRouting, ScriptLibraryIsLoadedOnTheMasterThatLacksIt) {
  RedisPool redis(parse_redis_url(seeds()), 2);
  const auto map = current_map();
  for (const auto& m : map.masters()) direct(m.port).command({"FUNCTION", "FLUSH"});
  for (int i = 0; i < 30; ++i) {
    const auto lease = "route:{lease" + std::to_string(i) + "}:leader";
    EXPECT_EQ(redis.eval("lease", {lease}, {"me", "60000"}).integer, 1) << lease;
    EXPECT_EQ(direct(current_map().master_of(key_slot(lease))->port).command({"GET", lease}).str, "me");
  }
}

TEST_F(ClusterRouting, CrossSlotCallIsRefusedBeforeItIsSent) {
  RedisPool redis(parse_redis_url(seeds()), 1);
  try {
    redis.eval("queue_config", {"ojs:{a}:x", "ojs:{b}:y"}, {"", "0", "0", "0"});  // a script of two keys
    FAIL() << "a cross-slot script call was sent";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("cross-slot"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("ojs:{b}:y"), std::string::npos) << e.what();
  }
}

// Moves one slot to another master, as redis-cli --cluster reshard does; the
// client's map still names the old owner. While the slot migrates (its key
// already moved) the old owner answers ASK, afterwards MOVED.
TEST_F(ClusterRouting, FollowsAskDuringMigrationAndMovedAfterIt) {
  RedisPool redis(parse_redis_url(seeds()), 2);
  const std::string key = "route:{migrating}:v";
  ASSERT_EQ(redis.command({"SET", key, "here"}).str, "OK");
  const int slot = key_slot(key);
  const auto map = current_map();
  const NodeAddress from = *map.master_of(slot);
  NodeAddress to;
  for (const auto& m : map.masters())
    if (!(m == from)) to = m;
  const auto from_id = id_of(from.port), to_id = id_of(to.port);
  ASSERT_EQ(direct(to.port).command({"CLUSTER", "SETSLOT", std::to_string(slot), "IMPORTING", from_id}).str, "OK");
  ASSERT_EQ(direct(from.port).command({"CLUSTER", "SETSLOT", std::to_string(slot), "MIGRATING", to_id}).str, "OK");
  ASSERT_EQ(direct(from.port).command({"MIGRATE", to.host, std::to_string(to.port), "", "0", "5000", "KEYS", key}).str, "OK");
  ASSERT_TRUE(parse_redirect(direct(from.port).command({"GET", key}).str)) << "the old owner should redirect now";
  EXPECT_EQ(redis.command({"GET", key}).str, "here");  // through ASK + ASKING
  for (const auto& m : map.masters())
    ASSERT_EQ(direct(m.port).command({"CLUSTER", "SETSLOT", std::to_string(slot), "NODE", to_id}).str, "OK");
  EXPECT_EQ(redis.command({"GET", key}).str, "here");  // through MOVED
  EXPECT_EQ(redis.command({"SET", key, "there"}).str, "OK");
  EXPECT_EQ(direct(to.port).command({"GET", key}).str, "there");
}

// Last: it changes the cluster's shape. A master is SIGKILLed; calls to its slots
// wait (within the bound) until its replica is promoted, then succeed.
// (It once failed because the master died before its replica's first sync, so the
// replica could never be promoted: scripts/redis-cluster.sh now waits for every
// replica's link before the cluster counts as started.)
// A command whose slot no master serves (every node's map lost it) is sent again
// once the map is read again, and refused when the failover bound passes: never
// answered as if it had run.
TEST_F(ClusterRouting, ACommandForASlotNoMasterServesIsRetriedThenRefused) {
  const std::string key = "route:{unserved}:v";
  const int slot = key_slot(key);
  const int owner = current_map().master_of(slot)->port;
  ClusterRouter::Options options;
  options.seeds = {{"127.0.0.1", base_}, {"127.0.0.1", base_ + 1}};
  options.pool_size = 1;
  options.failover_bound = std::chrono::milliseconds(800);
  ClusterRouter router(options);
  ASSERT_EQ(router.pipeline({{"SET", key, "1"}}).front().str, "OK");
  for (int i = 0; i < 6; ++i) direct(base_ + i).command({"CLUSTER", "DELSLOTS", std::to_string(slot)});
  EXPECT_THROW(router.pipeline({{"GET", key}}), StoreUnavailable);
  direct(owner).command({"CLUSTER", "ADDSLOTS", std::to_string(slot)});
  // Every node learns the owner again (gossip), then the command is served.
  for (int tries = 0; tries < 100 && !current_map().master_of(slot); ++tries) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::vector<RedisValue> replies;
  for (int tries = 0; tries < 50; ++tries) {
    try {
      replies = router.pipeline({{"GET", key}});
      break;
    } catch (const StoreUnavailable&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies.front().str, "1");
}

TEST_F(ClusterRouting, WaitsOutAFailover) {
  RedisPool redis(parse_redis_url(seeds()), 2);
  const std::string key = "route:{failover}:n";
  ASSERT_EQ(redis.command({"SET", key, "1"}).str, "OK");
  direct(current_map().master_of(key_slot(key))->port).command({"WAIT", "1", "2000"});
  const int victim = current_map().master_of(key_slot(key))->port;
  std::ifstream pidfile(dir_ + "/node-" + std::to_string(victim - base_) + "/redis.pid");
  pid_t pid = 0;
  pidfile >> pid;
  ASSERT_GT(pid, 0);
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  // Gone, and its sockets closed (a request already in flight would get a 503 instead).
  for (int i = 0; i < 100 && kill(pid, 0) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // Blocks through the election (node timeout 2 s); on a loaded machine the election
  // may outlast the client's 15 s bound: then 503 (StoreUnavailable) and the caller
  // retries, as a worker would. Refused connections never sent the INCR: it counts once.
  RedisValue reply;
  for (int attempt = 0;; ++attempt) {
    try {
      reply = redis.command({"INCR", key});
      break;
    } catch (const StoreUnavailable& e) {
      ASSERT_LT(attempt, 4) << e.what();
    }
  }
  EXPECT_EQ(reply.integer, 2) << reply.str;
  EXPECT_NE(current_map().master_of(key_slot(key))->port, victim);
}

}  // namespace
}  // namespace ojs::broker::cluster
