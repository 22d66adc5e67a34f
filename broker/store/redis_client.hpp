// A small pool of blocking hiredis connections. Any transport failure marks the
// connection broken (it is reconnected on next use) and surfaces as
// StoreUnavailable, which the HTTP edge renders as 503.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "broker/store/store_error.hpp"

struct redisContext;

namespace ojs::broker {

struct RedisEndpoint {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string unix_socket;  // used when not empty
  std::string password;
  int db = 0;
  std::string describe() const;
};

// redis://[:password@]host[:port][/db] or unix:///path/to/socket[?db=N]
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
  // Several commands in one round trip, replies in order.
  std::vector<RedisValue> pipeline(const std::vector<std::vector<std::string>>& commands);
  // EVALSHA of an embedded script (see lua_scripts.hpp), loading it on NOSCRIPT.
  RedisValue eval(const std::string& script, const std::vector<std::string>& keys, const std::vector<std::string>& args);
  // The same, with plain commands sent behind it in the same round trip (their
  // replies are dropped; on NOSCRIPT they have run before the script does).
  RedisValue eval(const std::string& script, const std::vector<std::string>& keys, const std::vector<std::string>& args,
                  const std::vector<std::vector<std::string>>& then);
  bool ping();

  const RedisEndpoint& endpoint() const { return endpoint_; }

 private:
  struct Lease;
  redisContext* acquire();
  void release(redisContext* ctx, bool broken);
  redisContext* connect();

  RedisEndpoint endpoint_;
  std::size_t size_;
  std::mutex mutex_;
  std::vector<redisContext*> idle_;
  std::size_t open_ = 0;
  std::vector<std::pair<std::string, std::string>> script_shas_;  // name -> sha1
};

}  // namespace ojs::broker
