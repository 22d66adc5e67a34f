// Waiting for a condition a test cannot be told about (another process's state):
// polled, bounded, never a fixed sleep standing in for it.
#pragma once
#include <chrono>
#include <thread>

namespace ojs::test {

// Polls until `done` holds or about `ms` passed; returns whether it held.
template <class F>
bool eventually(int ms, F done) {
  for (int waited = 0; waited < ms; waited += 50) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

}  // namespace ojs::test
