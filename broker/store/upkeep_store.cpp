#include "broker/store/upkeep_store.hpp"

#include <stdexcept>

#include "broker/store/job_store_internal.hpp"

namespace ojs::broker {

using detail::with_workflow_keys;

long long UpkeepStore::promote(const std::string& queue) {
  return redis_.eval("promote", with_workflow_keys({keys::stats(queue), keys::events(queue)}, queue, {keys::finished_prefix(queue)}), {})
      .integer;
}

UpkeepStore::ExpirySweep UpkeepStore::sweep_expired(const std::string& queue, int limit) {
  const auto reply = redis_.eval("expire_sweep",
                                 with_workflow_keys({keys::expiring(queue), keys::stats(queue), keys::events(queue)}, queue,
                                                    {keys::finished_prefix(queue)}),
                                 {std::to_string(limit)});
  if (reply.elements.size() < 2) throw std::runtime_error("malformed expire_sweep reply");
  return {reply.elements[0].integer, reply.elements[1].integer};
}

std::vector<UpkeepStore::DueWork> UpkeepStore::due_work(const std::vector<std::string>& queues, std::int64_t now_ms) {
  std::vector<DueWork> out(queues.size());
  if (queues.empty()) return out;
  const auto now = std::to_string(now_ms);
  std::vector<std::vector<std::string>> cmds;
  cmds.reserve(3 * queues.size());
  for (const auto& q : queues) {
    cmds.push_back({"ZRANGEBYSCORE", keys::delayed(q), "-inf", now, "LIMIT", "0", "1"});
    cmds.push_back({"ZRANGEBYSCORE", keys::gangs(q), "-inf", now, "LIMIT", "0", "1"});
    cmds.push_back({"ZRANGEBYSCORE", keys::expiring(q), "-inf", now, "LIMIT", "0", "1"});
  }
  const auto replies = redis_.pipeline(cmds);
  for (std::size_t i = 0; i < queues.size(); ++i) {
    out[i].promote = !replies[3 * i].elements.empty();
    out[i].gangs = !replies[3 * i + 1].elements.empty();
    out[i].expired = !replies[3 * i + 2].elements.empty();
  }
  return out;
}

long long UpkeepStore::repair_class_heads(const std::string& queue) {
  return redis_.eval("class_heads_repair", {keys::classes(queue), keys::ready_prefix(queue), keys::class_heads(queue)}, {})
      .integer;
}

long long UpkeepStore::expire_gangs(const std::string& queue) {
  return redis_.eval("gang_expire",
                     {keys::gangs(queue), keys::seq(queue), keys::events(queue), keys::ledger(queue),
                      keys::tenant_ledger(queue), keys::job_prefix(queue), keys::ready_prefix(queue), keys::class_heads(queue)},
                     {})
      .integer;
}

}  // namespace ojs::broker
