// Exponential backoff with full jitter (AWS Architecture Blog, "Exponential Backoff
// And Jitter": sleep = random_between(0, min(cap, base * 2^attempt))) for calls to
// an unreachable broker: many workers restarting together must not hammer it in
// lockstep, and full jitter spreads them over the whole window.
#pragma once
#include <chrono>
#include <random>

namespace ojs::worker {

class ExponentialBackoff {
 public:
  using Duration = std::chrono::milliseconds;
  // seed: the random sequence (tests fix it; the default differs per process).
  ExponentialBackoff(Duration initial = Duration(200), Duration maximum = Duration(30000),
                     std::mt19937::result_type seed = std::random_device{}())
      : initial_(initial), maximum_(maximum), random_(seed) {}

  // The wait before the next try: uniform in [0, ceiling], the ceiling doubling per
  // failure from `initial` up to `maximum`.
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
