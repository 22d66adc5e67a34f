// One Redis connection per I/O thread for the requests that run there as fibers
// (ojs/core/fibers.hpp). A fiber appends its commands and suspends; what the
// thread's fibers appended in one turn of its loop goes out in one write
// (pipelined across requests), and each fiber is resumed when its replies are in.
// A lost connection or a Redis that does not answer in time fails every waiting
// fiber (StoreUnavailable / StoreTimedOut, a 503 at the edge); the next call
// connects again.
#pragma once
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "broker/store/redis_client.hpp"

struct redisContext;
namespace boost::asio {
class io_context;
}

namespace ojs::broker {

class FiberLink {
 public:
  // connect: a blocking, handshaken connection (RedisPool::connect); where: for messages.
  FiberLink(boost::asio::io_context& loop, std::function<redisContext*()> connect, std::string where);
  ~FiberLink();
  FiberLink(const FiberLink&) = delete;
  FiberLink& operator=(const FiberLink&) = delete;

  // On a fiber of `loop`: the commands' replies, in order. Throws StoreUnavailable.
  std::vector<RedisValue> exchange(const std::vector<std::vector<std::string>>& commands);

 private:
  struct Waiting;
  struct Socket;
  void open();
  void schedule_flush();
  enum class Ready { to_read, to_write };
  void when_ready(Ready what, bool& pending, void (FiberLink::*next)());
  void flush();
  void wait_readable();
  void on_readable();
  void arm_timer();
  void fail(const std::string& why, bool timed_out);

  boost::asio::io_context& loop_;
  std::function<redisContext*()> connect_;
  std::string where_;
  redisContext* ctx_ = nullptr;
  std::unique_ptr<Socket> socket_;
  std::deque<Waiting*> waiting_;  // in the order their commands were appended
  std::uint64_t generation_ = 0;  // a new connection's: callbacks of an older one do nothing
  bool flush_scheduled_ = false, writing_ = false, reading_ = false, timer_armed_ = false;
};

}  // namespace ojs::broker
