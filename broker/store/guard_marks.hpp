// What FETCH's capacity guards read from Redis: this worker's capacity hold and
// whether any reservation exists. Both keys are global (keys.hpp holds,
// reservations), like the worker's own records, so the worker's contact pipeline
// reads them in the same round trip (WorkerStore::contact) and a FETCH reads them
// once, whatever the number of queues and claim rounds.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "broker/store/redis_client.hpp"

namespace ojs::broker {

struct GuardMarks {
  std::optional<std::string> hold;  // the hold's JSON (preemption/capacity_hold), when one names this worker
  bool reservations = false;        // any reservation exists (then they are read in full)
};

// The two reads, to append to a pipeline, and their replies as marks (defined in
// preemption_store.cpp, beside the other reads of the holds and reservations).
std::vector<std::vector<std::string>> guard_mark_reads(const std::string& worker_id);
GuardMarks guard_marks_from(const RedisValue& hold, const RedisValue& reservations_exist);

}  // namespace ojs::broker
