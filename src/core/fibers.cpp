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

// AddressSanitizer keeps one stack per thread unless told of each switch: without
// the annotations below, an exception unwinding a fiber's stack makes it unpoison
// the wrong range ("False positive error reports may follow") and later frames
// report stack-buffer-overflows that are not there. Boost.Context does this itself
// only in its ucontext build (BOOST_USE_ASAN); Debian's is fcontext.
#if defined(__SANITIZE_ADDRESS__)
#define OJS_FIBERS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define OJS_FIBERS_ASAN 1
#endif
#endif
#ifdef OJS_FIBERS_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

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
#ifdef OJS_FIBERS_ASAN
    // The frames that never returned (Boost's entry trampoline) leave their redzones
    // poisoned: the next fiber on this stack, or the next mapping at this address,
    // starts clean.
    ASAN_UNPOISON_MEMORY_REGION(static_cast<char*>(s.sp) - s.size, s.size);
#endif
    if (free_.size() >= kStacksKept) return ctx::protected_fixedsize_stack(kStackBytes).deallocate(s);
    free_.push_back(s);
  }

 private:
  std::vector<ctx::stack_context> free_;
};
thread_local StackCache stacks;

struct Fiber {
  boost::asio::io_context* loop = nullptr;
  std::function<void()> fn;
  ctx::fiber self;    // the fiber while it is suspended
  ctx::fiber caller;  // the loop's side, while the fiber runs
  Locals locals;
  bool done = false;
#ifdef OJS_FIBERS_ASAN
  const void* stack_bottom = nullptr;  // this fiber's stack, for ASan
  std::size_t stack_size = 0;
  const void* caller_bottom = nullptr;  // the loop's stack it was resumed from
  std::size_t caller_size = 0;
  void* fake_stack = nullptr;  // its fake frames while it is switched out
#endif
};

// The allocator Boost.Context is given: it draws from the thread's cache.
struct CachedStack {
  Fiber* fiber;
  ctx::stack_context allocate() {
    auto s = stacks.take();
#ifdef OJS_FIBERS_ASAN
    fiber->stack_bottom = static_cast<char*>(s.sp) - s.size;
    fiber->stack_size = s.size;
#endif
    return s;
  }
  void deallocate(ctx::stack_context& s) noexcept { stacks.give(s); }
};

// ASan's side of a switch: start names the stack about to run (nullptr for
// `save` when the one left is finished for good), finish is called first thing on
// the stack that runs again, and learns the one it came from.
inline void asan_start_switch(void** save, const void* bottom, std::size_t size) {
#ifdef OJS_FIBERS_ASAN
  __sanitizer_start_switch_fiber(save, bottom, size);
#else
  (void)save, (void)bottom, (void)size;
#endif
}
inline void asan_finish_switch(void* saved, const void** from_bottom, std::size_t* from_size) {
#ifdef OJS_FIBERS_ASAN
  __sanitizer_finish_switch_fiber(saved, from_bottom, from_size);
#else
  (void)saved, (void)from_bottom, (void)from_size;
#endif
}

thread_local Fiber* running = nullptr;
thread_local Locals thread_locals;
std::atomic<int> slots_taken{0};

void switch_into(Fiber* f) {
  running = f;
  void* loop_fake_stack = nullptr;
#ifdef OJS_FIBERS_ASAN
  asan_start_switch(&loop_fake_stack, f->stack_bottom, f->stack_size);
#endif
  f->self = std::move(f->self).resume();
  asan_finish_switch(loop_fake_stack, nullptr, nullptr);
  running = nullptr;
  if (f->done) delete f;
}

}  // namespace

void start(boost::asio::io_context& loop, std::function<void()> fn) {
  if (running) throw std::logic_error("fibers::start from inside a fiber");
  auto* f = new Fiber;
  f->loop = &loop;
  f->fn = std::move(fn);
  f->self = ctx::fiber(std::allocator_arg, CachedStack{f}, [f](ctx::fiber&& caller) {
#ifdef OJS_FIBERS_ASAN
    asan_finish_switch(nullptr, &f->caller_bottom, &f->caller_size);
#endif
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
#ifdef OJS_FIBERS_ASAN
    asan_start_switch(nullptr, f->caller_bottom, f->caller_size);  // this stack is done with
#endif
    return std::move(f->caller);
  });
  switch_into(f);
}

boost::asio::io_context* current_loop() { return running ? running->loop : nullptr; }

void suspend(const std::function<void(Resume)>& arm) {
  Fiber* f = running;
  if (!f) throw std::logic_error("fibers::suspend outside a fiber");
  arm([f] { boost::asio::post(*f->loop, [f] { switch_into(f); }); });
#ifdef OJS_FIBERS_ASAN
  asan_start_switch(&f->fake_stack, f->caller_bottom, f->caller_size);
#endif
  f->caller = std::move(f->caller).resume();
#ifdef OJS_FIBERS_ASAN
  asan_finish_switch(f->fake_stack, &f->caller_bottom, &f->caller_size);
#endif
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
