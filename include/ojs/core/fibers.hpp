// Fibers on an I/O thread. A request handler written as plain blocking
// code runs on the asio thread that read its request; where it would block on
// Redis it suspends instead, and the thread serves other connections until the
// reply is in. No thread hand-off, and the commands of the requests a thread runs
// at once go out to Redis together.
//
// Rules for code that may run on a fiber: never hold a mutex across a call that
// may suspend (another fiber of the same thread would block the thread on it);
// pause with fibers::sleep_for, not std::this_thread::sleep_for; keep per-request
// state in a fibers::Local, not in a thread_local.
#pragma once
#include <chrono>
#include <functional>

namespace boost::asio {
class io_context;
}

namespace ojs::fibers {

// Resumes a suspended fiber. May be called from any thread, once: it posts the
// switch to the fiber's loop.
using Resume = std::function<void()>;

// Runs fn on a new fiber of the calling thread, which must be the one thread
// running `loop`. Returns when fn ends or first suspends. fn must not throw (what
// escapes it is logged and dropped).
void start(boost::asio::io_context& loop, std::function<void()> fn);

// The loop of the fiber running now; nullptr outside a fiber.
boost::asio::io_context* current_loop();

// Suspends the fiber running now until the Resume handed to `arm` is called.
// `arm` runs on the fiber before it switches away.
void suspend(const std::function<void(Resume)>& arm);

// Pauses the caller: a fiber yields its thread for d, a plain thread sleeps.
void sleep_for(std::chrono::milliseconds d);

namespace detail {
void* local(int slot, void* (*make)(), void (*destroy)(void*));
int new_slot();
}  // namespace detail

// A value per fiber (per thread outside fibers), made on first use and destroyed
// with its fiber or thread: what a request keeps beside its call stack (who is
// asking, what it will write at its end).
template <class T>
class Local {
 public:
  T& get() {
    return *static_cast<T*>(detail::local(
        slot_, [] { return static_cast<void*>(new T()); }, [](void* p) { delete static_cast<T*>(p); }));
  }

 private:
  int slot_ = detail::new_slot();
};

}  // namespace ojs::fibers
