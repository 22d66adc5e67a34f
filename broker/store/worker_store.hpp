// The worker registry in Redis, in the global slot (keys.hpp: workers, worker:<id>,
// worker:<id>:jobs): contact, capabilities, directive state and the claim records
// that make a worker's load. What the records mean (whether a worker may be
// forgotten) is the registry's (workers/worker_registry.hpp).
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "broker/store/guard_marks.hpp"
#include "broker/store/redis_client.hpp"
#include "ojs/ml/worker_load.hpp"

namespace ojs::broker {

struct WorkerInfo {
  std::string id;
  std::string state = "running";  // running | quiet | terminate
  std::int64_t last_seen_ms = 0;
  nlohmann::json capabilities;     // null when the worker never sent any
  std::vector<std::string> queues;
};

// A job on the worker that the preemption controller marked (preempt.lua).
struct PreemptionMarkView {
  std::string job_id;
  std::int64_t deadline_ms = 0;
  bool checkpoint = false;
  std::string preempted_for;
};

// What a worker holds, verified against the jobs: its load for matching and the
// jobs it must give up.
struct HeldState {
  ml::WorkerLoad load;
  std::vector<PreemptionMarkView> preempting;
};

// A claim record as written at claim (not verified against the job).
struct HeldJob {
  std::string job_id, queue;
  int gpus = 0;
  std::vector<int> devices;
  ml::Labels labels;
};

class WorkerStore {
 public:
  explicit WorkerStore(RedisPool& redis) : redis_(redis) {}

  // Records contact now and reads the directive state, the claim records (verified
  // in a second pipeline when there are any) and FETCH's capacity guards, in one
  // pipeline. The capabilities and queues (JSON text) are written when given;
  // nullptr leaves the stored ones.
  struct Contact {
    std::string state;
    HeldState held;
    GuardMarks guards;  // read in the same pipeline: FETCH's capacity guards need no round trip of their own
  };
  Contact contact(const std::string& worker_id, const std::string* capabilities_json, const std::string* queues_json);
  // Lists the worker from now on if unknown (NX: a known worker keeps its last contact).
  void set_state(const std::string& worker_id, const std::string& state);
  std::optional<WorkerInfo> get(const std::string& worker_id);
  std::vector<WorkerInfo> list();
  // Ids silent since older_than_ms (at most `limit`, 0 = all).
  std::vector<std::string> silent_since(std::int64_t older_than_ms, int limit = 0);
  // prune_worker.lua: drops the worker's entry and both hashes if still silent since then.
  bool prune(const std::string& worker_id, std::int64_t silent_since_ms);

  void record_claim(const std::string& worker_id, const std::string& job_id, const nlohmann::json& entry);
  std::vector<HeldJob> held_jobs(const std::string& worker_id);
  // The claim records verified against the job hashes: records of jobs that
  // finished or moved to another worker are dropped (so they heal after any crash).
  HeldState held_state(const std::string& worker_id);

 private:
  HeldState verify(const std::string& worker_id, const RedisValue& entries);
  RedisPool& redis_;
};

}  // namespace ojs::broker
