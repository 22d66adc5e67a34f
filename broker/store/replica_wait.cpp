#include "broker/store/replica_wait.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>

namespace ojs::broker {

bool may_write(const std::vector<std::string>& argv) {
  if (argv.empty()) return false;
  std::string name = argv[0];
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  // The reads and connection commands the store sends; a command not listed counts as
  // a write (a needless WAIT costs a round trip to the replicas, a missing one a loss).
  static constexpr std::array<std::string_view, 44> kReads{
      "FCALL_RO", "GET",    "MGET",     "EXISTS",   "TYPE",      "TTL",           "PTTL",        "STRLEN",  "HGET",
      "HMGET",    "HGETALL", "HKEYS",   "HVALS",    "HLEN",      "HEXISTS",       "HSCAN",       "ZRANGE",  "ZREVRANGE",
      "ZRANGEBYSCORE", "ZREVRANGEBYSCORE", "ZRANGEBYLEX", "ZSCORE", "ZMSCORE", "ZCARD", "ZCOUNT", "ZRANK", "ZSCAN",
      "SMEMBERS", "SISMEMBER", "SMISMEMBER", "SCARD", "SSCAN", "LRANGE", "LLEN", "LINDEX", "XRANGE", "XREVRANGE", "XLEN",
      "XREAD",    "TIME",   "PING",     "INFO",     "CLUSTER",   "SCAN"};
  return std::find(kReads.begin(), kReads.end(), name) == kReads.end() && name != "WAIT" && name != "ASKING" &&
         name != "FUNCTION" && name != "ECHO" && name != "DBSIZE";
}

void require_replicas(const ReplicaWait& wait, long long confirmed, const std::string& where) {
  if (confirmed >= wait.replicas) return;
  throw StoreNotReplicated("Redis at " + where + ": a write reached " + std::to_string(confirmed) + " of the " +
                           std::to_string(wait.replicas) + " replicas --redis-replica-acks asks for within " +
                           std::to_string(wait.bound_ms) + " ms; a failover could undo it");
}

}  // namespace ojs::broker
