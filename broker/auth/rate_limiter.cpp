#include "broker/auth/rate_limiter.hpp"

#include <algorithm>

namespace ojs::broker::auth {

double RateLimiter::acquire(const std::string& key, double tokens, Clock::time_point now) {
  if (rate_ <= 0) return 0;
  std::lock_guard lock(mutex_);
  auto [it, fresh] = buckets_.try_emplace(key, Bucket{burst_, now});
  Bucket& b = it->second;
  if (!fresh) {
    const double elapsed = std::chrono::duration<double>(now - b.updated).count();
    b.tokens = std::min(burst_, b.tokens + std::max(0.0, elapsed) * rate_);
    b.updated = now;
  }
  if (b.tokens >= tokens) {
    b.tokens -= tokens;
    return 0;
  }
  return (tokens - b.tokens) / rate_;
}

}  // namespace ojs::broker::auth
