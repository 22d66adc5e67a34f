// /health and /ojs/status: whether Redis answers, whether it takes a write, and
// where it is (for the error text).
#pragma once
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

 private:
  RedisPool& redis_;
};

}  // namespace ojs::broker
