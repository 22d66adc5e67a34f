#include "broker/http/handler_pool.hpp"

#include <algorithm>
#include <utility>

namespace ojs::broker {

HandlerPool::HandlerPool(std::size_t threads) {
  threads_.reserve(threads);
  for (std::size_t t = 0; t < std::max<std::size_t>(1, threads); ++t) threads_.emplace_back([this] { run(); });
}

HandlerPool::~HandlerPool() {
  stop();
  join();
}

void HandlerPool::post(std::function<void()> task) {
  std::unique_lock lock(mutex_);
  if (stopped_) return;
  if (idle_.empty()) {
    backlog_.push_back(std::move(task));
    return;
  }
  Idle* idle = idle_.back();
  idle_.pop_back();
  idle->task = std::move(task);
  lock.unlock();
  idle->wake.notify_one();
}

void HandlerPool::stop() {
  std::lock_guard lock(mutex_);
  stopped_ = true;
  backlog_.clear();
  for (Idle* idle : idle_) idle->wake.notify_one();
}

void HandlerPool::join() {
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

std::size_t HandlerPool::idle_threads() {
  std::lock_guard lock(mutex_);
  return idle_.size();
}

void HandlerPool::run() {
  Idle self;
  std::unique_lock lock(mutex_);
  while (!stopped_) {
    std::function<void()> task;
    if (!backlog_.empty()) {
      task = std::move(backlog_.front());
      backlog_.pop_front();
    } else {
      idle_.push_back(&self);
      self.wake.wait(lock, [&] { return self.task || stopped_; });
      if (!self.task) {  // stopped while idle
        idle_.erase(std::find(idle_.begin(), idle_.end(), &self));
        break;
      }
      task = std::move(self.task);
      self.task = nullptr;
    }
    lock.unlock();
    task();
    task = nullptr;  // what it captured is released outside the lock
    lock.lock();
  }
}

}  // namespace ojs::broker
