#include "broker/store/gang_store.hpp"

#include <algorithm>

#include "broker/store/keys.hpp"

namespace ojs::broker {

std::vector<GangFacts> GangStore::facts(const std::string& queue, const std::string& worker_id,
                                        const std::vector<std::string>& ids) {
  constexpr std::size_t kSlice = 256;  // a huge heartbeat never holds Redis long
  std::vector<GangFacts> out;
  for (std::size_t from = 0; from < ids.size(); from += kSlice) {
    const auto to = std::min(ids.size(), from + kSlice);
    std::vector<std::string> script_keys;
    std::vector<std::string> args{worker_id};
    for (std::size_t i = from; i < to; ++i) {
      script_keys.push_back(keys::job(queue, ids[i]));
      args.push_back(ids[i]);
    }
    for (const auto& e : redis_.eval("gang_facts", script_keys, args).elements)
      if (e.elements.size() >= 3) out.push_back({e.elements[0].str, e.elements[1].str, e.elements[2].str});
  }
  return out;
}

GangStore::LeaveMark GangStore::mark_leaving(const std::string& queue, const std::string& job_id, const std::string& worker_id,
                                             const std::string& preemptor, int grace_period_s, bool checkpoint) {
  const auto reply = redis_.eval("gang_leave", {keys::job(queue, job_id), keys::preempting(queue), keys::events(queue)},
                                 {preemptor, worker_id, std::to_string(grace_period_s), checkpoint ? "1" : "0"});
  LeaveMark out;
  if (reply.elements.size() < 2) return out;
  if (reply.elements[0].str == "ok") out.deadline_ms = std::stoll(reply.elements[1].str);
  else out.refused = reply.elements[1].str;
  return out;
}

std::optional<JobRecord> GangStore::member_left(const std::string& queue, const std::string& job_id, const std::string& worker_id) {
  const auto reply = redis_.eval("gang_left",
                                 {keys::job(queue, job_id), keys::preempting(queue), keys::events(queue), keys::ledger(queue),
                                  keys::tenant_ledger(queue), keys::gangs_growing(queue), keys::usage(queue)},
                                 {job_id, worker_id});
  if (reply.elements.size() < 2 || reply.elements[0].str != "ok") return std::nullopt;
  return JobRecord::from_flat_array(reply.elements[1]);
}

}  // namespace ojs::broker
