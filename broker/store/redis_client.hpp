// A small pool of blocking hiredis connections. Any transport failure marks the
// connection broken (it is reconnected on next use) and surfaces as
// StoreUnavailable, which the HTTP edge renders as 503. Given a redis-cluster://
// URL the pool routes every command by its keys' slot (cluster_client.hpp).
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "broker/store/replica_wait.hpp"
#include "broker/store/store_error.hpp"

struct redisContext;
namespace boost::asio {
class io_context;
}

namespace ojs::broker {
namespace cluster {
class ClusterRouter;
}
class FiberLink;

struct RedisEndpoint {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string unix_socket;  // used when not empty
  std::string password;
  int db = 0;
  std::vector<std::string> cluster_seeds;  // redis-cluster://: "host:port" of nodes to discover the slots from
  ReplicaWait replica_wait;  // replicas each writing round trip waits for (replica_wait.hpp)
  std::string describe() const;
};

// redis://[:password@]host[:port][/db], unix:///path/to/socket[?db=N] or
// redis-cluster://[:password@]host:port[,host:port...] (a Redis Cluster, db 0)
RedisEndpoint parse_redis_url(const std::string& url);

struct RedisValue {
  enum class Type { nil, integer, string, array, status, error };
  Type type = Type::nil;
  long long integer = 0;
  std::string str;
  std::vector<RedisValue> elements;

  bool is_nil() const { return type == Type::nil; }
  bool is_error() const { return type == Type::error; }
  const std::string& as_string() const { return str; }
};

class RedisPool {
 public:
  RedisPool(RedisEndpoint endpoint, std::size_t size);
  ~RedisPool();

  // One command; argv[0] is the command name. Throws StoreUnavailable.
  RedisValue command(const std::vector<std::string>& argv);
  // Several commands in one round trip, replies in order. A script call among them
  // (script_call) that finds Redis without the library loads it and is sent again with
  // the commands behind it (so put behind a script only what may run twice: reads).
  std::vector<RedisValue> pipeline(const std::vector<std::vector<std::string>>& commands);
  // The FCALL of an embedded script's function (see lua_scripts.hpp) as a command for
  // pipeline(), its key count checked against the script's header.
  static std::vector<std::string> script_call(const std::string& script, const std::vector<std::string>& keys,
                                              const std::vector<std::string>& args);
  // FCALL of an embedded script's function (see lua_scripts.hpp), loading the
  // library when Redis lacks it ("Function not found").
  RedisValue eval(const std::string& script, const std::vector<std::string>& keys, const std::vector<std::string>& args);
  // The same, with plain commands sent behind it in the same round trip: they run
  // after the script (sent again behind the second call when the library had to be
  // loaded); their replies in then_replies (e.g. a job read back native, not
  // through the script's reply: a value crossing Lua costs Redis ~1k instructions).
  RedisValue eval(const std::string& script, const std::vector<std::string>& keys, const std::vector<std::string>& args,
                  const std::vector<std::vector<std::string>>& then, std::vector<RedisValue>* then_replies = nullptr);
  // The same, with plain commands sent ahead of it in the same round trip: they run
  // before the script, in order (on a cluster, whose pipeline orders commands per node
  // only, they take a round trip of their own first); their replies in before_replies.
  RedisValue eval_after(const std::vector<std::vector<std::string>>& before, const std::string& script,
                        const std::vector<std::string>& keys, const std::vector<std::string>& args,
                        std::vector<RedisValue>* before_replies = nullptr);
  bool ping();

  const RedisEndpoint& endpoint() const { return endpoint_; }

  // The commands as they are, to this pool's one node, replies unread: no routing
  // and no outage check (the cluster router sends to each master with it).
  // Throws StoreUnreachable when no connection could be made (nothing was sent).
  std::vector<RedisValue> send(const std::vector<std::vector<std::string>>& commands);
  void drop_idle();  // after a lost connection: the idle ones are likely dead too
  // Test an idle connection for a close by the server before reusing it (one
  // poll): a cluster node pool, where a killed master must not cost a 503.
  void check_idle_connections() { check_idle_ = true; }

 private:
  struct Lease;
  redisContext* acquire();
  void release(redisContext* ctx, bool broken);
  redisContext* connect();
  FiberLink& fiber_link(boost::asio::io_context& loop);
  void load_library();  // FUNCTION LOAD (every master of a cluster)
  std::vector<RedisValue> pipeline_once(const std::vector<std::vector<std::string>>& commands);
  RedisValue eval_with(const std::vector<std::vector<std::string>>& before, const std::string& script,
                       const std::vector<std::string>& keys, const std::vector<std::string>& args,
                       const std::vector<std::vector<std::string>>& then, std::vector<RedisValue>* before_replies,
                       std::vector<RedisValue>* then_replies);

  RedisEndpoint endpoint_;
  std::size_t size_;
  std::uint64_t id_;  // names this pool's connection on each fiber thread (fiber_link)
  std::mutex mutex_;
  std::vector<redisContext*> idle_;
  std::size_t open_ = 0;
  std::unique_ptr<cluster::ClusterRouter> cluster_;  // set for redis-cluster:// endpoints
  // Refuse multi-key calls that span slots on one node too (OJS_REDIS_CHECK_SLOTS=1,
  // set by the integration fixtures, or a debug build): a cluster would refuse them.
  bool check_slots_ = false;
  bool check_idle_ = false;
};

}  // namespace ojs::broker
