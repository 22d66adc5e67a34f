#include "broker/store/redis_client.hpp"

#include <hiredis/hiredis.h>
#include <poll.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <stdexcept>
#include <unordered_map>

#include <boost/asio/io_context.hpp>

#include "broker/store/cluster_client.hpp"
#include "broker/store/fiber_link.hpp"
#include "broker/store/lua_scripts.hpp"
#include "broker/store/redis_wire.hpp"
#include "ojs/core/fibers.hpp"

namespace ojs::broker {

namespace {

// Redis refusing writes (persistence failure, OOM, loading) is an outage too.
void throw_on_outage(const std::vector<RedisValue>& replies, const std::string& where) {
  for (const auto& v : replies)
    if (v.is_error() && (v.str.rfind("LOADING", 0) == 0 || v.str.rfind("MISCONF", 0) == 0 ||
                         v.str.rfind("OOM", 0) == 0 || v.str.rfind("BUSY", 0) == 0 || v.str.rfind("READONLY", 0) == 0))
      throw StoreUnavailable("Redis at " + where + ": " + v.str);
}

// An idle connection never has anything to read: if it does, the server closed it.
bool closed_by_server(redisContext* ctx) {
  pollfd p{ctx->fd, POLLIN, 0};
  return poll(&p, 1, 0) != 0;
}

// The fiber links of one loop, by pool id. A link's socket and timer belong to the
// loop, so the links live in it (an asio service) and go when it shuts down, while
// the services those objects use still exist: kept per thread instead, a loop
// destroyed before its thread ended left them to a thread-exit destructor that
// read its freed timer service (ASan: heap-use-after-free). Used only by the one
// thread that runs the loop, as fibers are.
class LoopFiberLinks : public boost::asio::execution_context::service {
 public:
  static inline boost::asio::execution_context::id id;
  explicit LoopFiberLinks(boost::asio::execution_context& loop) : service(loop) {}
  std::unordered_map<std::uint64_t, std::unique_ptr<FiberLink>> links;

 private:
  void shutdown() override { links.clear(); }
};

}  // namespace

std::string RedisEndpoint::describe() const {
  if (!cluster_seeds.empty()) {
    std::string out = "redis-cluster";
    char separator = ' ';
    for (const auto& s : cluster_seeds) {
      out += separator + s;
      separator = ',';
    }
    return out;
  }
  return unix_socket.empty() ? host + ":" + std::to_string(port) : "unix:" + unix_socket;
}

RedisEndpoint parse_redis_url(const std::string& url) {
  RedisEndpoint ep;
  auto take_db = [&](const std::string& s) {
    if (s.empty()) return;
    try { ep.db = std::stoi(s); } catch (...) { throw std::invalid_argument("bad database number in Redis URL: " + url); }
  };
  if (url.rfind("unix://", 0) == 0) {
    std::string rest = url.substr(7);
    const auto q = rest.find("?db=");
    if (q != std::string::npos) { take_db(rest.substr(q + 4)); rest = rest.substr(0, q); }
    ep.unix_socket = rest;
    if (ep.unix_socket.empty()) throw std::invalid_argument("Redis unix URL needs a socket path: " + url);
    return ep;
  }
  const bool cluster = url.rfind("redis-cluster://", 0) == 0;
  if (url.rfind("redis://", 0) != 0 && !cluster)
    throw std::invalid_argument("Redis URL must start with redis://, unix:// or redis-cluster://: " + url);
  std::string rest = url.substr(cluster ? 16 : 8);
  const auto at = rest.rfind('@');
  if (at != std::string::npos) {
    std::string auth = rest.substr(0, at);
    const auto colon = auth.find(':');
    ep.password = colon == std::string::npos ? auth : auth.substr(colon + 1);
    rest = rest.substr(at + 1);
  }
  if (cluster) {
    // host:port,host:port,...: the nodes to discover the slots from (any one that answers will do).
    for (std::size_t from = 0; from <= rest.size();) {
      auto comma = rest.find(',', from);
      if (comma == std::string::npos) comma = rest.size();
      const auto seed = rest.substr(from, comma - from);
      const auto colon = seed.rfind(':');
      int port = 0;
      try { port = colon == std::string::npos ? 0 : std::stoi(seed.substr(colon + 1)); } catch (...) {}
      if (colon == 0 || port <= 0 || port > 65535)
        throw std::invalid_argument("each redis-cluster:// node must be host:port, not '" + seed + "': " + url);
      ep.cluster_seeds.push_back(seed);
      from = comma + 1;
    }
    return ep;
  }
  const auto slash = rest.find('/');
  if (slash != std::string::npos) { take_db(rest.substr(slash + 1)); rest = rest.substr(0, slash); }
  const auto colon = rest.rfind(':');
  if (colon != std::string::npos) {
    ep.host = rest.substr(0, colon);
    try { ep.port = std::stoi(rest.substr(colon + 1)); } catch (...) { throw std::invalid_argument("bad port in Redis URL: " + url); }
  } else if (!rest.empty()) {
    ep.host = rest;
  }
  return ep;
}

namespace {
std::atomic<std::uint64_t> pools_made{0};
}  // namespace

RedisPool::RedisPool(RedisEndpoint endpoint, std::size_t size) : endpoint_(std::move(endpoint)), size_(size), id_(++pools_made) {
  lua_library();  // built now: the event bound is fixed from here on (lua_scripts.hpp)
#ifndef NDEBUG
  check_slots_ = true;
#endif
  if (const char* check = std::getenv("OJS_REDIS_CHECK_SLOTS")) check_slots_ = std::string(check) == "1";
  if (!endpoint_.cluster_seeds.empty()) {
    cluster::ClusterRouter::Options options;
    for (const auto& seed : endpoint_.cluster_seeds) {
      const auto colon = seed.rfind(':');
      options.seeds.push_back({seed.substr(0, colon), std::stoi(seed.substr(colon + 1))});
    }
    options.password = endpoint_.password;
    options.pool_size = size;
    options.replica_wait = endpoint_.replica_wait;
    cluster_ = std::make_unique<cluster::ClusterRouter>(std::move(options));
  }
}

RedisPool::~RedisPool() {
  for (auto* c : idle_) redisFree(c);
}

redisContext* RedisPool::connect() {
  const timeval connect_timeout{1, 0};
  redisContext* ctx = endpoint_.unix_socket.empty()
                          ? redisConnectWithTimeout(endpoint_.host.c_str(), endpoint_.port, connect_timeout)
                          : redisConnectUnixWithTimeout(endpoint_.unix_socket.c_str(), connect_timeout);
  if (!ctx) throw StoreUnreachable("cannot allocate Redis context");
  if (ctx->err) {
    std::string msg = std::string("cannot connect to Redis at ") + endpoint_.describe() + ": " + ctx->errstr;
    redisFree(ctx);
    throw StoreUnreachable(msg);
  }
  const timeval command_timeout{static_cast<time_t>(kRedisAnswerWithin.count()), 0};
  redisSetTimeout(ctx, command_timeout);
  auto init = [&](const std::vector<std::string>& argv) {
    append_commands(ctx, {argv});
    void* reply = nullptr;
    if (redisGetReply(ctx, &reply) != REDIS_OK || !reply) {
      std::string msg = std::string("Redis handshake failed: ") + ctx->errstr;
      redisFree(ctx);
      throw StoreUnreachable(msg);
    }
    const bool err = static_cast<redisReply*>(reply)->type == REDIS_REPLY_ERROR;
    std::string text = err ? static_cast<redisReply*>(reply)->str : "";
    freeReplyObject(reply);
    if (err) {
      redisFree(ctx);
      throw StoreUnavailable("Redis refused " + argv[0] + ": " + text);
    }
  };
  if (!endpoint_.password.empty()) init({"AUTH", endpoint_.password});
  if (endpoint_.db != 0) init({"SELECT", std::to_string(endpoint_.db)});
  use_value_replies(ctx);
  return ctx;
}

redisContext* RedisPool::acquire() {
  {
    std::lock_guard lock(mutex_);
    while (!idle_.empty()) {
      auto* c = idle_.back();
      idle_.pop_back();
      if (!check_idle_ || !closed_by_server(c)) return c;
      redisFree(c);
      --open_;
    }
    ++open_;
  }
  try {
    return connect();
  } catch (...) {
    std::lock_guard lock(mutex_);
    --open_;
    throw;
  }
}

void RedisPool::release(redisContext* ctx, bool broken) {
  std::lock_guard lock(mutex_);
  if (broken || idle_.size() >= size_) {
    redisFree(ctx);
    --open_;
    return;
  }
  idle_.push_back(ctx);
}

void RedisPool::drop_idle() {
  std::lock_guard lock(mutex_);
  for (auto* c : idle_) redisFree(c);
  open_ -= idle_.size();
  idle_.clear();
}

std::vector<RedisValue> RedisPool::pipeline(const std::vector<std::vector<std::string>>& commands) {
  auto out = pipeline_once(commands);
  // A Redis without the library (restarted or flushed, a new cluster master): load it,
  // and send again the first call that found none with every command behind it (they
  // ran before a script that did not: a read behind a script must see what it wrote).
  for (std::size_t i = 0; i < out.size(); ++i)
    if (commands[i][0] == "FCALL" && out[i].is_error() && out[i].str.starts_with("ERR Function not found")) {
      load_library();
      auto again = pipeline_once({commands.begin() + static_cast<std::ptrdiff_t>(i), commands.end()});
      std::move(again.begin(), again.end(), out.begin() + static_cast<std::ptrdiff_t>(i));
      break;
    }
  return out;
}

std::vector<RedisValue> RedisPool::pipeline_once(const std::vector<std::vector<std::string>>& commands) {
  if (cluster_) {
    auto out = cluster_->pipeline(commands);
    throw_on_outage(out, endpoint_.describe());
    return out;
  }
  if (check_slots_)
    for (const auto& argv : commands) cluster::command_slot(argv);
  const auto& wait = endpoint_.replica_wait;
  if (!wait.enabled() || std::none_of(commands.begin(), commands.end(), may_write)) {
    auto out = send(commands);
    throw_on_outage(out, endpoint_.describe());
    return out;
  }
  // WAIT on the connection that wrote: it counts the replicas that have
  // everything this connection wrote.
  auto batch = commands;
  batch.push_back(wait.command());
  auto out = send(batch);
  throw_on_outage(out, endpoint_.describe());
  require_replicas(wait, out.back().is_error() ? 0 : out.back().integer, endpoint_.describe());
  out.pop_back();
  return out;
}

// The connection of the calling fiber's thread to this pool's Redis (fiber_link.hpp).
FiberLink& RedisPool::fiber_link(boost::asio::io_context& loop) {
  auto& link = boost::asio::use_service<LoopFiberLinks>(loop).links[id_];
  if (!link) link = std::make_unique<FiberLink>(loop, [this] { return connect(); }, endpoint_.describe());
  return *link;
}

std::vector<RedisValue> RedisPool::send(const std::vector<std::vector<std::string>>& commands) {
  // A request running as a fiber on an I/O thread suspends instead of blocking the
  // thread. Cluster node pools (check_idle_) keep blocking: their router's retries
  // count on StoreUnreachable meaning "nothing was sent" per call.
  if (!check_idle_)
    if (auto* loop = fibers::current_loop()) return fiber_link(*loop).exchange(commands);
  redisContext* ctx = acquire();
  append_commands(ctx, commands);
  std::vector<RedisValue> out;
  out.reserve(commands.size());
  for (std::size_t i = 0; i < commands.size(); ++i) {
    void* reply = nullptr;
    if (redisGetReply(ctx, &reply) != REDIS_OK || !reply) {
      const int error = errno;
      const bool timed_out = ctx->err == REDIS_ERR_IO && (error == EAGAIN || error == EWOULDBLOCK || error == ETIMEDOUT);
      std::string msg = ctx->errstr[0] ? ctx->errstr : "connection lost";
      release(ctx, true);
      if (timed_out) throw StoreTimedOut("Redis at " + endpoint_.describe() + " did not answer in time: " + msg);
      throw StoreUnavailable("Redis at " + endpoint_.describe() + ": " + msg);
    }
    out.push_back(take_value(reply));
  }
  release(ctx, false);
  return out;
}

RedisValue RedisPool::command(const std::vector<std::string>& argv) { return pipeline({argv}).front(); }

RedisValue RedisPool::eval(const std::string& script, const std::vector<std::string>& keys,
                           const std::vector<std::string>& args) {
  return eval(script, keys, args, {});
}

RedisValue RedisPool::eval(const std::string& script, const std::vector<std::string>& keys,
                           const std::vector<std::string>& args, const std::vector<std::vector<std::string>>& then,
                           std::vector<RedisValue>* then_replies) {
  return eval_with({}, script, keys, args, then, nullptr, then_replies);
}

RedisValue RedisPool::eval_after(const std::vector<std::vector<std::string>>& before, const std::string& script,
                                 const std::vector<std::string>& keys, const std::vector<std::string>& args,
                                 std::vector<RedisValue>* before_replies) {
  return eval_with(before, script, keys, args, {}, before_replies, nullptr);
}

RedisValue RedisPool::eval_with(const std::vector<std::vector<std::string>>& before, const std::string& script,
                                const std::vector<std::string>& keys, const std::vector<std::string>& args,
                                const std::vector<std::vector<std::string>>& then, std::vector<RedisValue>* before_replies,
                                std::vector<RedisValue>* then_replies) {
  auto argv = script_call(script, keys, args);
  std::vector<std::vector<std::string>> batch;
  // A cluster pipeline orders commands per node only: the commands that must run
  // first get a round trip of their own there. One Redis runs a pipeline in order.
  if (cluster_ && !before.empty()) {
    auto replies = pipeline(before);
    if (before_replies) *before_replies = std::move(replies);
  } else {
    batch = before;
  }
  batch.push_back(std::move(argv));  // a claim's ~30 arguments, not copied again
  batch.insert(batch.end(), then.begin(), then.end());
  auto replies = pipeline(batch);  // a library reload sends the script and `then` again, in order
  const std::size_t at = batch.size() - 1 - then.size();
  RedisValue v = std::move(replies[at]);
  if (before_replies && at > 0) before_replies->assign(std::make_move_iterator(replies.begin()), std::make_move_iterator(replies.begin() + at));
  if (then_replies) then_replies->assign(std::make_move_iterator(replies.begin() + at + 1), std::make_move_iterator(replies.end()));
  if (v.is_error() && v.str.starts_with("ERR unknown command"))
    throw std::runtime_error("Redis at " + endpoint_.describe() + " lacks Redis Functions (FCALL): Redis 7.0 or later is required");
  if (v.is_error()) throw std::runtime_error("Lua script " + script + " failed: " + v.str);
  return v;
}

std::vector<std::string> RedisPool::script_call(const std::string& script, const std::vector<std::string>& keys,
                                                const std::vector<std::string>& args) {
  const auto& library = lua_library();
  const auto function = library.functions.find(script);
  if (function == library.functions.end()) throw std::logic_error("unknown Lua script: " + script);
  check_key_count(script, keys.size());  // the script's header says how many (lua_scripts.hpp)
  std::vector<std::string> argv{"FCALL", function->second, std::to_string(keys.size())};
  argv.insert(argv.end(), keys.begin(), keys.end());
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

void RedisPool::load_library() {
  const auto& library = lua_library();
  const auto v = command({"FUNCTION", "LOAD", library.code});
  // Loaded already (another broker of this build, another thread): the same code, by its name.
  if (v.is_error() && v.str.find("already exists") == std::string::npos)
    throw std::runtime_error("FUNCTION LOAD of " + library.name + " failed: " + v.str);
}

bool RedisPool::ping() {
  try {
    auto v = command({"PING"});
    return v.type == RedisValue::Type::status && v.str == "PONG";
  } catch (const StoreUnavailable&) {
    return false;
  }
}

}  // namespace ojs::broker
