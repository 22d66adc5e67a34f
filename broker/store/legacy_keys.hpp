// One-time move of the global keys written by brokers before the Redis Cluster
// layout (ojs:queues, ojs:job-queue, ojs:worker:<id>, ojs:cron, ojs:unique:<key> ...)
// to their {_global} names (keys.hpp), so an upgraded broker keeps the jobs,
// queues, crons, unique keys and workers the old one wrote.
#pragma once
#include <cstddef>

namespace ojs::broker {

class RedisPool;

// Single Redis only: a cluster never held the old layout, and the old and new
// names of a key live in different slots. RENAMENX per key, so brokers starting
// together move each key once; a key whose new name exists already stays where
// it is, logged. Returns the number of keys moved. Throws StoreUnavailable.
std::size_t migrate_legacy_global_keys(RedisPool& redis);

}  // namespace ojs::broker
