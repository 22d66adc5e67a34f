// Fibers on an asio loop (ojs/core/fibers.hpp): the request handlers' way of
// waiting for Redis without blocking their I/O thread.
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
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
