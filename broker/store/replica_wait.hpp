// A write answered as done must survive a failover: with
// --redis-replica-acks N, every round trip that writes ends with WAIT N <bound> on the
// same connection, and a write fewer than N replicas confirmed within the bound is
// not answered as done (StoreNotReplicated: its outcome is unknown, like a timeout).
#pragma once
#include <string>
#include <vector>

#include "broker/store/store_error.hpp"

namespace ojs::broker {

struct ReplicaWait {
  int replicas = 0;     // 0: no WAIT (replication stays asynchronous)
  int bound_ms = 1000;  // how long a write waits for them
  bool enabled() const { return replicas > 0; }
  std::vector<std::string> command() const { return {"WAIT", std::to_string(replicas), std::to_string(bound_ms)}; }
};

// Written on the master, not confirmed by enough replicas within the bound: a failover
// now could undo it. Treated as a timeout (a PUSH answers 504 with its id, others 503).
class StoreNotReplicated : public StoreTimedOut {
 public:
  using StoreTimedOut::StoreTimedOut;
};

// Whether a command may write (everything but the reads the broker sends): a round trip
// with one waits for the replicas.
bool may_write(const std::vector<std::string>& argv);

// Throws StoreNotReplicated unless WAIT's reply counts enough replicas.
void require_replicas(const ReplicaWait& wait, long long confirmed, const std::string& where);

}  // namespace ojs::broker
