// Fibers on Boost.Context (fcontext: a switch is a few dozen instructions, no
// system call), with guarded stacks kept per thread for reuse.
#include "ojs/core/fibers.hpp"

#include <array>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/context/fiber.hpp>
#include <boost/context/protected_fixedsize_stack.hpp>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

namespace ojs::fibers {
namespace {
namespace ctx = boost::context;

constexpr int kSlots = 8;
// Request handlers parse and render JSON and run the scheduler; a guard page below
// each stack turns an overflow into a crash, never into another fiber's memory.
constexpr std::size_t kStackBytes = 512 * 1024;
constexpr std::size_t kStacksKept = 64;  // per thread: a burst's stacks are reused, not mapped again

struct Locals {
  std::array<void*, kSlots> value{};
  std::array<void (*)(void*), kSlots> destroy{};
  ~Locals() { clear(); }
  void clear() {
    for (int i = 0; i < kSlots; ++i)
      if (value[i]) destroy[i](std::exchange(value[i], nullptr));
  }
};

// Stacks of fibers that ended, for the next ones of this thread.
class StackCache {
 public:
  ~StackCache() {
    for (auto& s : free_) ctx::protected_fixedsize_stack(kStackBytes).deallocate(s);
  }
  ctx::stack_context take() {
    if (free_.empty()) return ctx::protected_fixedsize_stack(kStackBytes).allocate();
    auto s = free_.back();
    free_.pop_back();
    return s;
  }
  void give(ctx::stack_context s) {
    if (free_.size() >= kStacksKept) return ctx::protected_fixedsize_stack(kStackBytes).deallocate(s);
    free_.push_back(s);
  }

 private:
  std::vector<ctx::stack_context> free_;
};
thread_local StackCache stacks;

// The allocator Boost.Context is given: it draws from the thread's cache.
struct CachedStack {
  ctx::stack_context allocate() { return stacks.take(); }
  void deallocate(ctx::stack_context& s) noexcept { stacks.give(s); }
};

struct Fiber {
  boost::asio::io_context* loop = nullptr;
  std::function<void()> fn;
  ctx::fiber self;    // the fiber while it is suspended
  ctx::fiber caller;  // the loop's side, while the fiber runs
  Locals locals;
  bool done = false;
};

thread_local Fiber* running = nullptr;
thread_local Locals thread_locals;
std::atomic<int> slots_taken{0};

void switch_into(Fiber* f) {
  running = f;
  f->self = std::move(f->self).resume();
  running = nullptr;
  if (f->done) delete f;
}

}  // namespace

void start(boost::asio::io_context& loop, std::function<void()> fn) {
  if (running) throw std::logic_error("fibers::start from inside a fiber");
  auto* f = new Fiber;
  f->loop = &loop;
  f->fn = std::move(fn);
  f->self = ctx::fiber(std::allocator_arg, CachedStack{}, [f](ctx::fiber&& caller) {
    f->caller = std::move(caller);
    try {
      f->fn();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fiber ended by an exception: %s\n", e.what());
    } catch (...) {
      std::fprintf(stderr, "fiber ended by an exception\n");
    }
    f->fn = nullptr;
    f->locals.clear();  // on the fiber, while its request's state may still be read
    f->done = true;
    return std::move(f->caller);
  });
  switch_into(f);
}

boost::asio::io_context* current_loop() { return running ? running->loop : nullptr; }

void suspend(const std::function<void(Resume)>& arm) {
  Fiber* f = running;
  if (!f) throw std::logic_error("fibers::suspend outside a fiber");
  arm([f] { boost::asio::post(*f->loop, [f] { switch_into(f); }); });
  f->caller = std::move(f->caller).resume();
}

void sleep_for(std::chrono::milliseconds d) {
  if (!running) return std::this_thread::sleep_for(d);
  boost::asio::steady_timer timer(*running->loop, d);
  suspend([&timer](Resume resume) { timer.async_wait([resume = std::move(resume)](auto) { resume(); }); });
}

namespace detail {

int new_slot() {
  const int slot = slots_taken++;
  if (slot >= kSlots) throw std::logic_error("too many fibers::Local values: raise kSlots");
  return slot;
}

void* local(int slot, void* (*make)(), void (*destroy)(void*)) {
  Locals& l = running ? running->locals : thread_locals;
  if (!l.value[slot]) {
    l.value[slot] = make();
    l.destroy[slot] = destroy;
  }
  return l.value[slot];
}

}  // namespace detail
}  // namespace ojs::fibers
