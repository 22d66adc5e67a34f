// Workers the broker has seen: last contact, advertised capabilities, and the
// lifecycle directive an admin set for them (running, quiet, terminate).
#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

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

class WorkerRegistry {
 public:
  explicit WorkerRegistry(RedisPool& redis) : redis_(redis) {}
  // Records contact; returns the directive state the worker must follow.
  std::string touch(const std::string& worker_id, const nlohmann::json* capabilities,
                    const std::vector<std::string>& queues);
  void set_state(const std::string& worker_id, const std::string& state);
  std::optional<WorkerInfo> get(const std::string& worker_id);
  std::vector<WorkerInfo> list();
  std::vector<std::string> stale(std::int64_t older_than_ms);
  // Forgets up to `limit` workers silent since `older_than_ms` that hold no job
  // (their record, capabilities and claim records); returns their ids. Without it
  // every worker id ever seen stays listed and scanned.
  std::vector<std::string> prune(std::int64_t older_than_ms, int limit);
  // One worker, if silent since `silent_since_ms` and holding no job; true when forgotten.
  bool forget(const std::string& worker_id, std::int64_t silent_since_ms);

  // What runs on a worker, for the dynamic half of matching: recorded at claim,
  // verified against the jobs themselves at read (entries of jobs that finished
  // or moved to another worker are dropped), so it heals after any crash.
  void record_claim(const std::string& worker_id, const std::string& job_id, const std::string& queue,
                    const ml::ActiveJob& job, const std::vector<int>& devices);
  ml::WorkerLoad load(const std::string& worker_id);
  // The claim records of a worker, per job (not verified against the jobs): the
  // preemption controller reads the jobs themselves.
  struct HeldJob {
    std::string job_id, queue;
    int gpus = 0;
    std::vector<int> devices;
    ml::Labels labels;
  };
  std::vector<HeldJob> held_jobs(const std::string& worker_id);

 private:
  RedisPool& redis_;
};

}  // namespace ojs::broker
