#include "worker/agent/backoff.hpp"

#include <algorithm>

namespace ojs::worker {

ExponentialBackoff::Duration ExponentialBackoff::next_delay() {
  const unsigned shift = std::min(failures_, 20u);
  ++failures_;
  const auto ceiling = std::min<Duration::rep>(maximum_.count(), initial_.count() << shift);
  std::uniform_int_distribution<Duration::rep> jitter(0, ceiling);  // full jitter
  return Duration(jitter(random_));
}

}  // namespace ojs::worker
