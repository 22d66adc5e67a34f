// Thrown by the store when Redis cannot be reached or answers with an error the
// broker cannot act on. It is an ojs::BackendUnavailable (ojs/core/error.hpp),
// the type the HTTP edge turns into 503 (never a crash): code above the services
// catches that base and never names the store.
#pragma once
#include <string>

#include "ojs/core/error.hpp"

namespace ojs::broker {

class StoreUnavailable : public BackendUnavailable {
 public:
  using BackendUnavailable::BackendUnavailable;
};

// No connection could be made: nothing was sent, so a retry cannot repeat a write.
class StoreUnreachable : public StoreUnavailable {
 public:
  using StoreUnavailable::StoreUnavailable;
};

// Sent, and no answer within the command timeout: Redis is stalled (SIGSTOP, a
// long fork, a partition), not gone, and may still run the commands when it
// resumes. A write's outcome is unknown: a blind retry could repeat it.
class StoreTimedOut : public StoreUnavailable {
 public:
  using StoreUnavailable::StoreUnavailable;
};

}  // namespace ojs::broker
