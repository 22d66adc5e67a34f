// Token buckets per key (an identity): `rate` tokens per second refill a bucket
// of `burst`; each request takes one (a batch of N jobs takes N, all or none).
// Refused requests learn how long to wait.
// Per broker process: N brokers behind a balancer admit up to N times the rate.
#pragma once
#include <chrono>
#include <mutex>
#include <string>
#include <unordered_map>

namespace ojs::broker::auth {

class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  RateLimiter(double rate_per_second, double burst) : rate_(rate_per_second), burst_(burst < 1 ? 1 : burst) {}

  // 0 when admitted; otherwise the seconds until `tokens` are available (> 0),
  // and nothing is taken. More tokens than the burst can never be admitted.
  double acquire(const std::string& key, double tokens = 1, Clock::time_point now = Clock::now());
  double burst() const { return burst_; }
  bool enabled() const { return rate_ > 0; }

 private:
  struct Bucket {
    double tokens;
    Clock::time_point updated;
  };
  double rate_, burst_;
  std::mutex mutex_;
  std::unordered_map<std::string, Bucket> buckets_;
};

}  // namespace ojs::broker::auth
