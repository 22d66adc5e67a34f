// Redis Cluster routing behind RedisPool (--redis redis-cluster://host:port,...).
// Each command goes to the master of its keys' slot (cluster_slots.hpp); a
// pipeline is split by node and its replies are put back in order. MOVED updates
// the slot map and refreshes it, ASK sends ASKING then the command to the
// importing node once. A master that cannot be reached, or a reply saying the
// cluster is failing over (CLUSTERDOWN, TRYAGAIN, LOADING, READONLY,
// MASTERDOWN), is retried with a fresh map until the failover bound has passed,
// then surfaces as StoreUnavailable (503). A connection lost while a command was
// in flight is not retried (the command may have run): 503 at once, the node's
// idle connections are dropped and the map is refreshed on the next call.
#pragma once
#include <chrono>
#include <map>
#include <optional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "broker/store/cluster_slots.hpp"
#include "broker/store/redis_client.hpp"

namespace ojs::broker::cluster {

// The keys of one command: FCALL/FCALL_RO its numkeys keys, DEL/EXISTS/MGET/UNLINK/
// TOUCH every argument, keyless commands (PING, INFO, FUNCTION, CLUSTER, ...) none,
// every other command its first argument.
std::vector<std::string> command_keys(const std::vector<std::string>& argv);

// The slot a command must run in (-1: keyless, any master). Throws std::logic_error
// naming the keys when they span slots (a cross-slot call is a bug in the caller).
int command_slot(const std::vector<std::string>& argv);

// What an error reply asks the router to do.
enum class ReplyAction {
  done,    // a reply for the caller (success or an error that is the caller's)
  moved,   // the slot lives elsewhere now: update the map, send again
  ask,     // the key is being migrated: ASKING + the command on the named node, once
  retry,   // the cluster is failing over or the node is not a master yet: back off, refresh, send again
};
ReplyAction classify(const RedisValue& reply);

class ClusterRouter {
 public:
  struct Options {
    std::vector<NodeAddress> seeds;
    std::string password;
    std::size_t pool_size = 4;  // idle connections per master
    std::chrono::milliseconds failover_bound{15000};
    ReplicaWait replica_wait;  // WAIT behind each master's share of a writing round trip
  };
  explicit ClusterRouter(Options options);
  ~ClusterRouter();

  std::vector<RedisValue> pipeline(const std::vector<std::vector<std::string>>& commands);
  std::string describe() const;

 private:
  // A round of a pipeline: its pending commands grouped by the master serving each now.
  struct Round {
    std::uint64_t generation = 0;  // of the map the groups were made from
    std::map<std::string, std::pair<NodeAddress, std::vector<std::size_t>>> groups;  // by host:port
    std::vector<std::size_t> unmapped;  // commands whose slot has no master in the map
  };
  // What a round leaves for the next: the commands to send again, and whether to read
  // the map again (stale) or wait first (back_off).
  struct Retry {
    std::vector<std::size_t> again;
    bool stale = false, back_off = false;
    std::string last_error;
  };
  using Commands = std::vector<std::vector<std::string>>;

  RedisPool& pool_for(const NodeAddress& node);
  void refresh(std::uint64_t seen_generation);
  std::vector<NodeAddress> known_nodes();
  // A FUNCTION command: sent to every master, the first reply answers it.
  RedisValue broadcast(const Commands& commands);
  Round group_by_master(const std::vector<std::size_t>& pending, const std::vector<int>& slots,
                        const std::vector<std::optional<NodeAddress>>& asked);
  // Sends one master's share (with ASKING where redirected, and a WAIT behind writes
  // when replica acks are on); fills `out` with what is done, `retry` with the rest.
  void send_to_master(const NodeAddress& node, const std::vector<std::size_t>& indexes, const Commands& commands,
                      std::vector<std::optional<NodeAddress>>& asked, std::vector<RedisValue>& out, Retry& retry);

  Options options_;
  std::mutex mutex_;  // map_, generation_, pools_
  SlotMap map_;
  std::uint64_t generation_ = 0;  // bumped per refresh: concurrent callers refresh once
  std::map<std::string, std::unique_ptr<RedisPool>> pools_;  // by host:port, never erased
  std::mutex refresh_mutex_;
};

}  // namespace ojs::broker::cluster
