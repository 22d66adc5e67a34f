#include "broker/store/fiber_link.hpp"

#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "broker/store/redis_wire.hpp"
#include "broker/store/store_error.hpp"
#include "ojs/core/fibers.hpp"

namespace ojs::broker {
namespace asio = boost::asio;

namespace {
// hiredis's description of its context's last error, or `otherwise` when it gave none.
std::string error_of(const redisContext* ctx, const char* otherwise) { return ctx->errstr[0] ? ctx->errstr : otherwise; }
}  // namespace

struct FiberLink::Waiting {
  std::size_t want = 0;
  std::vector<RedisValue> replies;
  std::chrono::steady_clock::time_point since;
  fibers::Resume resume;
  std::string error;
  bool timed_out = false;
};

// The connection's descriptor as asio waits on it (a duplicate: hiredis closes its own),
// and the timer that watches the oldest waiting fiber.
struct FiberLink::Socket {
  Socket(asio::io_context& loop, int fd) : fd(loop, fd), timer(loop) {}
  asio::posix::stream_descriptor fd;
  asio::steady_timer timer;
};

FiberLink::FiberLink(asio::io_context& loop, std::function<redisContext*()> connect, std::string where)
    : loop_(loop), connect_(std::move(connect)), where_(std::move(where)) {}

FiberLink::~FiberLink() {
  socket_.reset();
  if (ctx_) redisFree(ctx_);
}

void FiberLink::open() {
  redisContext* ctx = connect_();  // throws StoreUnreachable: nothing sent
  const int fd = ::dup(ctx->fd);
  if (fd < 0 || ::fcntl(ctx->fd, F_SETFL, ::fcntl(ctx->fd, F_GETFL) | O_NONBLOCK) != 0) {
    if (fd >= 0) ::close(fd);
    redisFree(ctx);
    throw StoreUnreachable("Redis at " + where_ + ": cannot set up a non-blocking connection");
  }
  ctx->flags &= ~REDIS_BLOCK;  // hiredis: a read or write that would block is "try again", not an error
  ctx_ = ctx;
  socket_ = std::make_unique<Socket>(loop_, fd);
  ++generation_;
  flush_scheduled_ = writing_ = reading_ = timer_armed_ = false;
}

std::vector<RedisValue> FiberLink::exchange(const std::vector<std::vector<std::string>>& commands) {
  if (commands.empty()) return {};
  if (!ctx_) open();
  append_commands(ctx_, commands);
  Waiting w;
  w.want = commands.size();
  w.since = std::chrono::steady_clock::now();
  waiting_.push_back(&w);
  schedule_flush();
  wait_readable();
  arm_timer();
  fibers::suspend([&w](fibers::Resume resume) { w.resume = std::move(resume); });
  if (!w.error.empty()) {
    if (w.timed_out) throw StoreTimedOut("Redis at " + where_ + " did not answer in time: " + w.error);
    throw StoreUnavailable("Redis at " + where_ + ": " + w.error);
  }
  return std::move(w.replies);
}

// Once per turn of the loop: every fiber that ran in this turn has appended by then.
void FiberLink::schedule_flush() {
  if (flush_scheduled_ || writing_) return;
  flush_scheduled_ = true;
  asio::post(loop_, [this, gen = generation_] {
    if (gen != generation_) return;
    flush_scheduled_ = false;
    flush();
  });
}

// Calls `next` once the connection is ready for `what`; `pending` is set meanwhile.
// A wait of an earlier connection (its generation) does nothing.
void FiberLink::when_ready(Ready what, bool& pending, void (FiberLink::*next)()) {
  pending = true;
  socket_->fd.async_wait(what == Ready::to_read ? asio::posix::stream_descriptor::wait_read : asio::posix::stream_descriptor::wait_write,
                         [this, &pending, next, gen = generation_](const boost::system::error_code& ec) {
                           if (gen != generation_) return;
                           pending = false;
                           if (ec) return fail(ec.message(), false);
                           (this->*next)();
                         });
}

void FiberLink::flush() {
  int done = 0;
  if (redisBufferWrite(ctx_, &done) == REDIS_ERR) return fail(error_of(ctx_, "write failed"), false);
  if (!done) when_ready(Ready::to_write, writing_, &FiberLink::flush);  // the rest when it drains
}

// Always armed while connected, idle too: a connection the server closed (Redis
// restarted, its idle timeout) is dropped when that happens, not found dead by the
// next request, which then connects afresh instead of answering 503.
void FiberLink::wait_readable() {
  if (!reading_ && socket_) when_ready(Ready::to_read, reading_, &FiberLink::on_readable);
}

void FiberLink::on_readable() {
  if (redisBufferRead(ctx_) == REDIS_ERR) return fail(error_of(ctx_, "connection lost"), false);  // idle: just dropped
  while (!waiting_.empty()) {
    void* reply = nullptr;
    if (redisGetReplyFromReader(ctx_, &reply) == REDIS_ERR) return fail(error_of(ctx_, "protocol error"), false);
    if (!reply) break;
    Waiting* w = waiting_.front();
    w->replies.push_back(take_value(reply));
    if (w->replies.size() == w->want) {
      waiting_.pop_front();
      w->resume();  // posted: the fiber runs after this callback
    }
  }
  if (waiting_.empty()) {
    void* stray = nullptr;  // a reply nobody asked for: the stream is out of step
    if (redisGetReplyFromReader(ctx_, &stray) == REDIS_OK && stray) {
      take_value(stray);
      return fail("a reply no request was waiting for", false);
    }
    if (timer_armed_) {  // nothing to watch
      socket_->timer.cancel();
      timer_armed_ = false;
    }
  }
  wait_readable();
}

void FiberLink::arm_timer() {
  if (timer_armed_ || waiting_.empty()) return;
  timer_armed_ = true;
  socket_->timer.expires_at(waiting_.front()->since + kRedisAnswerWithin);
  socket_->timer.async_wait([this, gen = generation_](const boost::system::error_code& ec) {
    if (gen != generation_ || ec) return;
    timer_armed_ = false;
    if (!waiting_.empty() && waiting_.front()->since + kRedisAnswerWithin <= std::chrono::steady_clock::now())
      return fail("no reply within " + std::to_string(kRedisAnswerWithin.count()) + " s", true);
    arm_timer();  // the oldest waiting now came later
  });
}

// Every waiting fiber gets the error; the connection is dropped, the next call opens one.
void FiberLink::fail(const std::string& why, bool timed_out) {
  ++generation_;
  auto waiting = std::move(waiting_);
  waiting_.clear();
  socket_.reset();  // cancels its waits: their callbacks see an old generation
  redisFree(ctx_);
  ctx_ = nullptr;
  for (Waiting* w : waiting) {
    w->error = why;
    w->timed_out = timed_out;
    w->resume();
  }
}

}  // namespace ojs::broker
