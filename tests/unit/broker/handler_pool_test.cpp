// HandlerPool (broker/http/handler_pool.*): every task runs, tasks posted while
// every thread is busy wait their turn, the thread idle the shortest time takes
// the next task, and stop() drops what has not started.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "broker/http/handler_pool.hpp"

using ojs::broker::HandlerPool;

namespace {

// Waits (bounded) until `done` holds.
template <class Done>
bool wait_until(Done done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace

TEST(HandlerPool, TasksPostedWhileEveryThreadIsBusyAllRun) {
  HandlerPool pool(2);
  std::mutex m;
  std::condition_variable cv;
  bool release = false;
  std::atomic<int> ran{0};
  for (int i = 0; i < 50; ++i)
    pool.post([&] {
      std::unique_lock lock(m);
      cv.wait(lock, [&] { return release; });  // the first two hold both threads: the rest queue
      ++ran;
    });
  {
    std::lock_guard lock(m);
    release = true;
  }
  cv.notify_all();
  EXPECT_TRUE(wait_until([&] { return ran == 50; })) << ran << " of 50 ran";
}

// One task at a time, each posted after the previous ended: the thread that just
// went idle takes the next one, so a pool of 8 serves them all from one thread.
TEST(HandlerPool, TheThreadIdleTheShortestTimeTakesTheNextTask) {
  HandlerPool pool(8);
  std::set<std::thread::id> threads;
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(wait_until([&] { return pool.idle_threads() == 8; }));  // the last one is back among the idle
    std::atomic<bool> done{false};
    std::thread::id who;
    pool.post([&] {
      who = std::this_thread::get_id();
      done = true;
    });
    ASSERT_TRUE(wait_until([&] { return done.load(); }));
    threads.insert(who);
  }
  EXPECT_EQ(threads.size(), 1u);
}

TEST(HandlerPool, StopDropsTasksNotStartedAndJoins) {
  HandlerPool pool(1);
  std::atomic<bool> started{false}, release{false};
  std::atomic<int> ran{0};
  pool.post([&] {
    started = true;
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ++ran;
  });
  ASSERT_TRUE(wait_until([&] { return started.load(); }));
  pool.post([&] { ++ran; });  // queued behind the running task
  pool.stop();
  release = true;
  pool.join();
  EXPECT_EQ(ran, 1);
  pool.post([&] { ++ran; });  // after stop: dropped
  EXPECT_EQ(ran, 1);
}
