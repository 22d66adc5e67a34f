// The one definition of a lost worker, read by the admin listing, the overview, the
// preemption controller and the scheduling pipeline's liveness filter.
#pragma once
#include <cstdint>

#include "broker/store/worker_store.hpp"

namespace ojs::broker {

// No contact (FETCH or heartbeat) for longer than dead_after_ms (--worker-dead-after-ms).
inline bool worker_lost(const WorkerInfo& worker, std::int64_t now_ms, std::int64_t dead_after_ms) {
  return now_ms - worker.last_seen_ms > dead_after_ms;
}

}  // namespace ojs::broker
