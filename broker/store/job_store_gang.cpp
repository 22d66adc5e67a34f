// [gangs] Gang claims and hold expiry: every key each script touches is declared
// (see claim_gang.lua, gang_expire.lua).
#include "broker/store/job_store.hpp"
#include "broker/store/keys.hpp"

namespace ojs::broker {

GangClaim JobStore::claim_gang(const std::string& queue, const GangMemberInfo& member,
                               std::optional<std::int64_t> request_visibility_ms, std::int64_t default_visibility_ms,
                               const std::vector<GangClass>& eligible) {
  std::vector<std::string> gang_keys{keys::paused(queue),  keys::job_prefix(queue),    keys::ready_prefix(queue),
                                     keys::gangs(queue),   keys::gang_deliveries(queue), keys::active(queue),
                                     keys::events(queue),  keys::config(queue),        keys::ledger(queue),
                                     keys::tenant_quotas(queue), keys::tenant_ledger(queue), keys::seq(queue),
                                     keys::class_heads(queue), keys::stats(queue), keys::rate_window(queue),
                                     keys::held(queue, member.worker_id)};
  for (auto& k : keys::workflow_transition_keys(queue)) gang_keys.push_back(std::move(k));  // [workflows] 17-27
  gang_keys.push_back(keys::finished_prefix(queue));  // [admin] 28: an expired member is finished
  gang_keys.push_back(keys::usage(queue));            // [usage] 29: a started gang's held use under `fair`
  std::vector<std::string> args{member.worker_id, optional_text(request_visibility_ms), std::to_string(default_visibility_ms),
                                member.address, member.port};
  for (const auto& c : eligible) {
    gang_keys.push_back(keys::ready(queue, c.id));
    for (auto& a : {c.id, std::to_string(c.gpus), c.devices_json, c.label_value, std::to_string(c.gpu_memory_mb)}) args.push_back(a);
  }
  const auto reply = redis_.eval("claim_gang", gang_keys, args);
  GangClaim out;
  const auto& kind = reply.elements.at(0).str;
  if (kind == "start") {
    out.kind = GangClaim::Kind::start;
    out.job = JobRecord::from_flat_array(reply.elements.at(1));
    out.job_id = out.job.id();
    out.rank = static_cast<int>(reply.elements.at(2).integer);
  } else if (kind == "held" || kind == "waiting") {
    out.kind = kind == "held" ? GangClaim::Kind::held : GangClaim::Kind::waiting;
    out.job_id = reply.elements.at(1).str;
    out.rank = static_cast<int>(reply.elements.at(2).integer);
    out.class_id = reply.elements.at(3).str;
  } else if (kind == "blocked") {
    out.kind = GangClaim::Kind::blocked;
    out.blocked = {reply.elements.at(1).str, reply.elements.at(2).integer, reply.elements.at(3).integer,
                   reply.elements.at(4).str};
  }
  return out;
}

long long JobStore::expire_gangs(const std::string& queue) {
  return redis_.eval("gang_expire",
                     {keys::gangs(queue), keys::seq(queue), keys::events(queue), keys::ledger(queue),
                      keys::tenant_ledger(queue), keys::job_prefix(queue), keys::ready_prefix(queue), keys::class_heads(queue)},
                     {})
      .integer;
}

}  // namespace ojs::broker
