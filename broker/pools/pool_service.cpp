#include "broker/pools/pool_service.hpp"

#include <algorithm>
#include <numeric>

#include "broker/workers/liveness.hpp"
#include "ojs/core/error.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker::pools {

using nlohmann::json;

namespace {
OjsError pool_not_found(const std::string& name) {
  return OjsError(ErrorCode::not_found, "pool " + name + " not found", {{"pool", name}});
}
}  // namespace

std::optional<Pool> PoolService::find(const std::string& name) {
  require_pool_name(name);
  const auto text = store_.get(name);
  if (!text) return std::nullopt;
  return pool_from_json(json::parse(*text));
}

PoolService::Saved PoolService::put(const std::string& name, const json& body) {
  Pool pool = parse_pool(name, body);
  const auto before = find(name);
  if (!before && store_.count() >= kMaxPools)
    throw OjsError(ErrorCode::validation_error, "at most " + std::to_string(kMaxPools) + " pools; delete one first", {{"pool", name}});
  pool.updated_at = format_rfc3339(now_ms());
  pool.created_at = before ? before->created_at : pool.updated_at;
  const auto stored = to_json(pool);
  const bool created = store_.put(name, stored.dump()) == PoolStore::Put::created;
  return {with_activity(pool, workers_.list()), created};
}

json PoolService::get(const std::string& name) {
  const auto pool = find(name);
  if (!pool) throw pool_not_found(name);
  return with_activity(*pool, workers_.list());
}

json PoolService::list() {
  const auto workers = workers_.list();
  json items = json::array();
  for (const auto& [name, text] : store_.all()) items.push_back(with_activity(pool_from_json(json::parse(text)), workers));
  return {{"items", items}};
}

json PoolService::remove(const std::string& name) {
  const auto pool = find(name);
  if (!pool || !store_.remove(name)) throw pool_not_found(name);
  return to_json(*pool);
}

json PoolService::with_activity(const Pool& pool, const std::vector<WorkerInfo>& workers) {
  const auto now = now_ms();
  const auto in_pool = [&](const std::string& q) { return std::find(pool.queues.begin(), pool.queues.end(), q) != pool.queues.end(); };
  const auto active_workers = std::count_if(workers.begin(), workers.end(), [&](const WorkerInfo& w) {
    return !worker_lost(w, now, worker_dead_after_ms_) &&
           (std::any_of(w.queues.begin(), w.queues.end(), in_pool) || std::any_of(w.fetched_queues.begin(), w.fetched_queues.end(), in_pool));
  });
  PoolStore::QueueReadRequest what;
  what.active = true;
  const auto read = store_.read_queues(pool.queues, what);
  json out = to_json(pool);
  out["active_workers"] = active_workers;
  out["active_jobs"] = std::accumulate(read.active.begin(), read.active.end(), 0LL);
  return out;
}

}  // namespace ojs::broker::pools
