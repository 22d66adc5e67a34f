// Thrown by the store when Redis cannot be reached or answers with an error the
// broker cannot act on. The HTTP edge turns it into 503 (never a crash).
#pragma once
#include <stdexcept>
#include <string>

namespace ojs::broker {

class StoreUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// No connection could be made: nothing was sent, so a retry cannot repeat a write.
class StoreUnreachable : public StoreUnavailable {
 public:
  using StoreUnavailable::StoreUnavailable;
};

}  // namespace ojs::broker
