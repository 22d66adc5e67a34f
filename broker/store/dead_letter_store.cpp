#include "broker/store/dead_letter_store.hpp"

#include "broker/store/keys.hpp"

namespace ojs::broker {

std::vector<JobRecord> DeadLetterStore::list(const std::string& queue, int offset, int limit) {
  auto ids = redis_.command({"ZREVRANGE", keys::dead(queue), std::to_string(offset), std::to_string(offset + limit - 1)});
  std::vector<std::vector<std::string>> cmds;
  for (const auto& id : ids.elements) cmds.push_back({"HGETALL", keys::job(queue, id.str)});
  std::vector<JobRecord> out;
  if (cmds.empty()) return out;
  for (const auto& reply : redis_.pipeline(cmds))
    if (!reply.elements.empty()) out.push_back(JobRecord::from_flat_array(reply));
  return out;
}

long long DeadLetterStore::size(const std::string& queue) {
  return redis_.command({"ZCARD", keys::dead(queue)}).integer;
}

Transition DeadLetterStore::act(const std::string& queue, const std::string& id, const std::string& action) {
  return JobStore::lean_transition(redis_, "dead_letter",
                                   {keys::job(queue, id), keys::dead(queue), keys::ready_prefix(queue), keys::seq(queue),
                                    keys::events(queue), keys::class_heads(queue), keys::finished_prefix(queue), keys::log(queue, id),
                                    keys::classes(queue), keys::classes_version(queue)},
                                   false, {id, action}, queue, id);
}

}  // namespace ojs::broker
