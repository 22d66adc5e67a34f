// Worker pools as the admin API manages them (ojs-fair-scheduling.md §10.1): create or
// replace, read one or all with what runs in them now, delete.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "broker/pools/pool.hpp"
#include "broker/store/pool_store.hpp"
#include "broker/workers/worker_registry.hpp"

namespace ojs::broker::pools {

class PoolService {
 public:
  PoolService(PoolStore& store, WorkerRegistry& workers, std::int64_t worker_dead_after_ms)
      : store_(store), workers_(workers), worker_dead_after_ms_(worker_dead_after_ms) {}

  struct Saved {
    nlohmann::json pool;
    bool created = false;
  };
  Saved put(const std::string& name, const nlohmann::json& body);
  nlohmann::json get(const std::string& name);     // the pool with active_workers, active_jobs; 404 when none
  nlohmann::json list();                           // {items: [pool with active_workers, active_jobs]} by name
  nlohmann::json remove(const std::string& name);  // the pool as it was; 404 when none

 private:
  std::optional<Pool> find(const std::string& name);
  // Adds active_workers (workers in contact whose FETCHes named one of its queues) and
  // active_jobs (jobs running from its queues).
  nlohmann::json with_activity(const Pool& pool, const std::vector<WorkerInfo>& workers);

  PoolStore& store_;
  WorkerRegistry& workers_;
  std::int64_t worker_dead_after_ms_;
};

}  // namespace ojs::broker::pools
