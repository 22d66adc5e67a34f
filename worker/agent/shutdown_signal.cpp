#include "worker/agent/shutdown_signal.hpp"

#include <signal.h>

#include <atomic>

namespace ojs::worker {

namespace {

std::atomic<bool> requested{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the flag is written from a signal handler");

extern "C" void on_shutdown_signal(int) { requested.store(true); }

}  // namespace

void install_shutdown_handlers() {
  struct sigaction action {};
  action.sa_handler = on_shutdown_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a broken connection is an error code, not a death
}

bool shutdown_requested() { return requested.load(); }

}  // namespace ojs::worker
