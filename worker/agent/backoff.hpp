// Exponential backoff with full jitter for calls to an unreachable broker:
// many workers restarting together must not hammer it in lockstep.
#pragma once
#include <chrono>
#include <random>

namespace ojs::worker {

class ExponentialBackoff {
 public:
  using Duration = std::chrono::milliseconds;
  ExponentialBackoff(Duration initial = Duration(200), Duration maximum = Duration(30000))
      : initial_(initial), maximum_(maximum), random_(std::random_device{}()) {}

  // The wait before the next try: uniform in [ceiling/2, ceiling], ceiling doubling per failure.
  Duration next_delay();
  void reset() { failures_ = 0; }
  unsigned failures() const { return failures_; }

 private:
  Duration initial_;
  Duration maximum_;
  unsigned failures_ = 0;
  std::mt19937 random_;
};

}  // namespace ojs::worker
