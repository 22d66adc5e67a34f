// /health and /ojs/status: whether Redis answers, whether it takes a write, and
// where it is (for the error text).
#pragma once
#include <optional>
#include <string>

#include "broker/store/redis_client.hpp"

namespace ojs::broker {

class RedisHealth {
 public:
  explicit RedisHealth(RedisPool& redis) : redis_(redis) {}

  bool reachable() { return redis_.ping(); }
  // Why Redis refuses a write (OOM under maxmemory, READONLY, MISCONF), "" when it takes one.
  std::string write_refusal();
  std::string where() const { return redis_.endpoint().describe(); }
  // The replicas connected to the master (INFO replication's connected_slaves); none when unreadable.
  std::optional<long long> connected_replicas();

 private:
  RedisPool& redis_;
};

}  // namespace ojs::broker
