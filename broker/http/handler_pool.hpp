// The threads that run request handlers (they block on Redis), apart from the
// I/O threads. Each task is handed to one idle thread, the one idle the
// shortest time (LIFO), and wakes only that thread: a woken thread always has
// work, and under light load the same few threads, caches warm, run every
// request. (asio::thread_pool shares one queue and condition variable: a
// thread that took a task woke another one whenever more were queued, which
// often found nothing; and waits rotated over all threads.)
#pragma once
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ojs::broker {

class HandlerPool {
 public:
  explicit HandlerPool(std::size_t threads);
  ~HandlerPool();  // stop() and join()
  HandlerPool(const HandlerPool&) = delete;
  HandlerPool& operator=(const HandlerPool&) = delete;

  void post(std::function<void()> task);
  void stop();  // tasks not started are dropped; running ones finish
  void join();
  std::size_t idle_threads();  // threads waiting for a task now

 private:
  struct Idle {
    std::condition_variable wake;
    std::function<void()> task;  // set by post() before it wakes the thread
  };
  void run();

  std::mutex mutex_;
  std::vector<Idle*> idle_;                    // a stack: back() waited the shortest
  std::deque<std::function<void()>> backlog_;  // tasks posted while every thread was busy
  bool stopped_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace ojs::broker
