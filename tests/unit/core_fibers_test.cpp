// Fibers on an asio loop (ojs/core/fibers.hpp): the request handlers' way of
// waiting for Redis without blocking their I/O thread.
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "ojs/core/fibers.hpp"

namespace {
using namespace std::chrono_literals;

TEST(Fibers, ASuspendedFiberLetsTheLoopRunOthersAndResumesWhereItWaited) {
  boost::asio::io_context loop(1);
  std::vector<std::string> order;
  ojs::fibers::Resume wake_a;
  boost::asio::post(loop, [&] {
    ojs::fibers::start(loop, [&] {
      order.push_back("a waits");
      ojs::fibers::suspend([&](ojs::fibers::Resume r) { wake_a = std::move(r); });
      order.push_back("a resumed");
    });
    order.push_back("start returned");  // a suspended: control is back on the loop
    ojs::fibers::start(loop, [&] {
      order.push_back("b runs");
      wake_a();
      order.push_back("b ends");  // a runs only after b yields the thread
    });
  });
  loop.run();
  EXPECT_EQ(order, (std::vector<std::string>{"a waits", "start returned", "b runs", "b ends", "a resumed"}));
}

TEST(Fibers, CurrentLoopIsSetOnlyOnAFiber) {
  boost::asio::io_context loop(1);
  boost::asio::io_context* seen = nullptr;
  EXPECT_EQ(ojs::fibers::current_loop(), nullptr);
  boost::asio::post(loop, [&] { ojs::fibers::start(loop, [&] { seen = ojs::fibers::current_loop(); }); });
  loop.run();
  EXPECT_EQ(seen, &loop);
}

TEST(Fibers, EachFiberKeepsItsOwnLocalAcrossASuspension) {
  static ojs::fibers::Local<int> who;  // as the broker keeps the request's identity
  boost::asio::io_context loop(1);
  std::vector<int> seen;
  boost::asio::post(loop, [&] {
    for (int i = 1; i <= 3; ++i)
      ojs::fibers::start(loop, [&, i] {
        who.get() = i;
        ojs::fibers::sleep_for(1ms);  // the others run and set theirs meanwhile
        seen.push_back(who.get());
      });
  });
  who.get() = 42;  // the thread's own, outside any fiber
  loop.run();
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(who.get(), 42);
}

TEST(Fibers, SleepYieldsTheThreadInsteadOfBlockingIt) {
  boost::asio::io_context loop(1);
  std::vector<std::string> order;
  boost::asio::post(loop, [&] {
    ojs::fibers::start(loop, [&] {
      ojs::fibers::sleep_for(20ms);
      order.push_back("sleeper");
    });
    boost::asio::post(loop, [&] { order.push_back("other work"); });
  });
  loop.run();
  EXPECT_EQ(order, (std::vector<std::string>{"other work", "sleeper"}));
}

TEST(Fibers, AnExceptionEndsOnlyItsFiber) {
  boost::asio::io_context loop(1);
  bool after = false;
  boost::asio::post(loop, [&] {
    ojs::fibers::start(loop, [] { throw std::runtime_error("a handler bug"); });
    ojs::fibers::start(loop, [&] { after = true; });
  });
  loop.run();
  EXPECT_TRUE(after);
}

// Frames with arrays (so with AddressSanitizer's redzones around them), some deep.
[[gnu::noinline]] void throw_from_deep_frame(int depth) {
  volatile char pad[256];
  pad[0] = static_cast<char>(depth);
  if (depth == 0) throw std::runtime_error("store unavailable");
  throw_from_deep_frame(depth - 1);
  pad[1] = pad[0];  // no tail call: every frame stays on the stack
}
[[gnu::noinline]] int use_stack(int depth) {
  char buf[512];
  std::memset(buf, depth, sizeof buf);
  return depth == 0 ? buf[3] : use_stack(depth - 1) + buf[7];
}

// As a handler does when Redis is gone: suspended, resumed from the loop, then an
// exception unwinds part of the fiber's stack and is caught there. The frames it
// unwound are reused by later calls, and by later fibers on the same (cached)
// stack. In the AddressSanitizer build (README.md "Sanitizers") this needs the
// stack switches annotated, else ASan reports stack-buffer-overflows here.
TEST(Fibers, AnExceptionCaughtOnAFiberLeavesItsStackUsable) {
  boost::asio::io_context loop(1);
  int caught = 0;
  int used = 0;
  boost::asio::post(loop, [&] {
    for (int i = 0; i < 4; ++i)
      ojs::fibers::start(loop, [&] {
        ojs::fibers::sleep_for(1ms);
        try {
          throw_from_deep_frame(8);
        } catch (const std::runtime_error&) {
          ++caught;
        }
        used += use_stack(12);
      });
  });
  loop.run();
  EXPECT_EQ(caught, 4);
  EXPECT_EQ(used, 4 * 78);  // 1 + 2 + ... + 12 each
}

TEST(Fibers, ManyFibersSuspendedAtOnceAllFinish) {
  boost::asio::io_context loop(1);
  int done = 0;
  boost::asio::post(loop, [&] {
    for (int i = 0; i < 2000; ++i)  // more than the stacks kept for reuse
      ojs::fibers::start(loop, [&] {
        ojs::fibers::sleep_for(1ms);
        ++done;
      });
  });
  loop.run();
  EXPECT_EQ(done, 2000);
}

}  // namespace
