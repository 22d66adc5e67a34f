#include "broker/store/legacy_keys.hpp"

#include <spdlog/spdlog.h>

#include <string>
#include <utility>
#include <vector>

#include "broker/store/keys.hpp"
#include "broker/store/redis_client.hpp"

namespace ojs::broker {

namespace {

// Old exact names and families (old prefix, new prefix); the families' new
// names come from keys.hpp applied to the old name's suffix.
std::vector<std::pair<std::string, std::string>> legacy_names() {
  return {{"ojs:queues", keys::queue_directory},    {"ojs:job-queue", keys::job_directory},
          {"ojs:workers", keys::workers},           {"ojs:holds", keys::holds},
          {"ojs:reservations", keys::reservations}, {"ojs:preemption:leader", keys::preemption_leader},
          {"ojs:cron", keys::cron_registry},        {"ojs:cron:leader", keys::cron_leader}};
}

std::vector<std::pair<std::string, std::string>> legacy_families() {
  // worker(id) and its claim-record hash share the prefix: "ojs:worker:<id>[:jobs]"
  // (the hash's records then fold into the held sets: WorkerStore::verify).
  const std::string worker_prefix = keys::worker("");
  return {{"ojs:worker:", worker_prefix}, {"ojs:unique:", keys::unique("")}, {"ojs:cron:state:", keys::cron_state("")}};
}

// The {_global} name of a key of the old layout; "" for a key that is none.
std::string new_name(const std::string& key) {
  for (const auto& [from, to] : legacy_names())
    if (key == from) return to;
  for (const auto& [old_prefix, new_prefix] : legacy_families())
    if (key.rfind(old_prefix, 0) == 0) return new_prefix + key.substr(old_prefix.size());
  return {};
}

RedisValue one(RedisPool& redis, std::vector<std::string> argv) {
  auto replies = redis.send({std::move(argv)});
  return replies.empty() ? RedisValue{} : std::move(replies.front());
}

bool move_key(RedisPool& redis, const std::string& from, const std::string& to) {
  const auto moved = one(redis, {"RENAMENX", from, to});
  if (moved.is_error()) return false;  // gone meanwhile: another broker moved it
  if (moved.integer == 0) {
    spdlog::warn("legacy key {} left in place: {} exists already (written by a newer broker)", from, to);
    return false;
  }
  return true;
}

}  // namespace

std::size_t migrate_legacy_global_keys(RedisPool& redis) {
  // One pass over the keyspace: every key of the new layout starts "ojs:{", every
  // global key of the old one "ojs:" and a letter.
  std::vector<std::string> found;
  std::string cursor = "0";
  do {
    const auto page = one(redis, {"SCAN", cursor, "MATCH", "ojs:[^{]*", "COUNT", "1000"});
    if (page.elements.size() != 2) break;
    cursor = page.elements[0].str;
    for (const auto& key : page.elements[1].elements) found.push_back(key.str);
  } while (cursor != "0");
  std::size_t moved = 0;
  for (const auto& key : found)
    if (const auto to = new_name(key); !to.empty() && move_key(redis, key, to)) ++moved;
  if (moved) spdlog::info("moved {} global keys of the pre-cluster layout to their {{_global}} names", moved);
  return moved;
}

}  // namespace ojs::broker
