// The store's Redis connection for fibers (broker/store/fiber_link.hpp), against a
// real redis-server: requests that run on one I/O thread share one connection,
// their commands go out together, and an outage fails them as 503s do.
#include <gtest/gtest.h>
#include <signal.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <functional>
#include <string>
#include <vector>

#include "broker/store/redis_client.hpp"
#include "broker/store/store_error.hpp"
#include "ojs/core/fibers.hpp"
#include "support/processes.hpp"

namespace {
using ojs::broker::RedisPool;

// Runs each body on its own fiber of `loop` until all have ended. (The link keeps
// a read armed on its connection, so the loop never runs out of work by itself.)
void run_fibers(boost::asio::io_context& loop, const std::vector<std::function<void()>>& bodies) {
  std::size_t left = bodies.size();
  boost::asio::post(loop, [&] {
    for (const auto& body : bodies)
      ojs::fibers::start(loop, [&] {
        body();
        if (--left == 0) loop.stop();
      });
  });
  loop.restart();
  loop.run();
}

// One command on a fiber: its reply's text, or "503" for a StoreUnavailable (the edge's answer).
std::string on_fiber(boost::asio::io_context& loop, RedisPool& pool, const std::vector<std::string>& argv) {
  std::string out;
  run_fibers(loop, {[&] {
               try {
                 out = pool.command(argv).str;
               } catch (const ojs::broker::StoreTimedOut&) {
                 out = "503 timed out";
               } catch (const ojs::broker::StoreUnavailable&) {
                 out = "503";
               }
             }});
  return out;
}

long long reads_processed(RedisPool& direct) {
  const auto info = direct.command({"INFO", "stats"}).str;
  return std::stoll(info.substr(info.find("total_reads_processed:") + 22));
}

TEST(FiberLink, FibersOfOneLoopTurnReachRedisInOneWrite) {
  ojs::test::RedisServer redis;
  RedisPool pool(ojs::broker::parse_redis_url(redis.url()), 2);
  RedisPool direct(ojs::broker::parse_redis_url(redis.url()), 1);
  boost::asio::io_context loop(1);
  ASSERT_EQ(on_fiber(loop, pool, {"PING"}), "PONG");  // the thread's connection is open before counting

  constexpr int kFibers = 20;
  std::vector<std::string> got(kFibers);
  std::vector<std::function<void()>> bodies;
  for (int i = 0; i < kFibers; ++i)
    bodies.push_back([&, i] {
      pool.command({"SET", "k" + std::to_string(i), "v" + std::to_string(i)});
      got[i] = pool.command({"GET", "k" + std::to_string(i)}).str;
    });
  const long long before = reads_processed(direct);
  run_fibers(loop, bodies);
  const long long reads = reads_processed(direct) - before;
  for (int i = 0; i < kFibers; ++i) EXPECT_EQ(got[i], "v" + std::to_string(i));
  // Blocking calls would be 40 reads (one per command); pipelined across the
  // fibers, each round is one read: the SETs, then the GETs (+1: this INFO).
  EXPECT_LE(reads, 4) << "Redis read " << reads << " times for " << kFibers << " fibers x 2 commands";
}

TEST(FiberLink, ARedisGoneIs503AndARestartedOneIsUsedByTheNextCall) {
  ojs::test::RedisServer redis;
  RedisPool pool(ojs::broker::parse_redis_url(redis.url()), 2);
  boost::asio::io_context loop(1);
  EXPECT_EQ(on_fiber(loop, pool, {"SET", "a", "1"}), "OK");
  redis.kill9();
  EXPECT_EQ(on_fiber(loop, pool, {"GET", "a"}), "503");
  redis.start();
  EXPECT_EQ(on_fiber(loop, pool, {"PING"}), "PONG");
}

TEST(FiberLink, AConnectionClosedWhileIdleIsReplacedBeforeTheNextRequest) {
  ojs::test::RedisServer redis;
  RedisPool pool(ojs::broker::parse_redis_url(redis.url()), 2);
  boost::asio::io_context loop(1);
  EXPECT_EQ(on_fiber(loop, pool, {"SET", "a", "1"}), "OK");
  redis.kill9();
  loop.restart();
  loop.poll();  // the server is gone (kill9 waited for it): the idle read sees the close, the link drops it
  redis.start();
  // The first request after the restart is served, not answered 503 on a dead connection.
  EXPECT_EQ(on_fiber(loop, pool, {"PING"}), "PONG");
}

TEST(FiberLink, AStalledRedisTimesOutTheWaitingFiber) {
  ojs::test::RedisServer redis;
  RedisPool pool(ojs::broker::parse_redis_url(redis.url()), 2);
  boost::asio::io_context loop(1);
  EXPECT_EQ(on_fiber(loop, pool, {"PING"}), "PONG");
  ASSERT_EQ(::kill(redis.pid(), SIGSTOP), 0);
  EXPECT_EQ(on_fiber(loop, pool, {"PING"}), "503 timed out");  // after the 5 s answer timeout
  ASSERT_EQ(::kill(redis.pid(), SIGCONT), 0);
  EXPECT_EQ(on_fiber(loop, pool, {"PING"}), "PONG");
}

TEST(FiberLink, OutsideAFiberThePoolStillBlocks) {
  ojs::test::RedisServer redis;
  RedisPool pool(ojs::broker::parse_redis_url(redis.url()), 2);
  EXPECT_EQ(pool.command({"PING"}).str, "PONG");  // no loop runs here at all
}

}  // namespace
