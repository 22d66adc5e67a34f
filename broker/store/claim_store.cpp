// Claims: every key each script touches is declared (see claim.lua,
// claim_gang.lua).
#include "broker/store/claim_store.hpp"

#include <algorithm>
#include <cstdlib>

#include "broker/store/job_store_internal.hpp"
#include "broker/store/priority_score.hpp"

namespace ojs::broker {

using detail::hints;
using detail::status_of;
using detail::with_workflow_keys;

ClaimOutcome ClaimStore::claim(const std::string& queue, const std::string& worker_id,
                               std::optional<std::int64_t> request_visibility_ms, std::int64_t default_visibility_ms,
                               int count, const std::string& classes_version, const std::vector<EligibleClass>& eligible,
                               bool record_held) {
  std::vector<std::string> args{worker_id,
                                optional_text(request_visibility_ms),
                                std::to_string(default_visibility_ms),
                                std::to_string(count),
                                classes_version,
                                score_band_arg()};
  std::vector<std::string> claim_keys{keys::classes_version(queue), keys::paused(queue), keys::delayed(queue),
                                      keys::active(queue),          keys::seq(queue),    keys::events(queue),
                                      keys::config(queue),          keys::ledger(queue), keys::tenant_quotas(queue),
                                      keys::tenant_ledger(queue),   keys::job_prefix(queue), keys::ready_prefix(queue),
                                      keys::stats(queue),           keys::rate_window(queue), keys::class_heads(queue),
                                      keys::held(queue, worker_id)};
  claim_keys.push_back(keys::finished_prefix(queue));  // [admin] 17: an expired job is finished
  // [usage] 18-21: the fair order's use per tenant, then the journal it folds first
  // and what the fold writes (usage_fold_keys' keys in claim.lua's order; the config is 7).
  for (auto* key : {keys::usage, keys::usage_journal, keys::usage_totals, keys::usage_hours}) claim_keys.push_back(key(queue));
  // One line per eligible class, parsed by claim.lua only for the classes it looks at.
  std::string lines;
  double max_bonus = eligible.empty() ? 0 : eligible.front().bonus;
  for (const auto& c : eligible) {
    max_bonus = std::max(max_bonus, c.bonus);
    lines += '\n';
    lines += c.id;
    lines += '\t';
    lines += number_text(c.bonus);
    lines += '\t';
    lines += std::to_string(c.hold_enqueued_after_ms);
    lines += '\t';
    lines += std::to_string(c.gpus);
    lines += '\t';
    lines += c.devices_json;
    lines += '\t';
    lines += std::to_string(c.gpu_memory_mb);
    if (c.backfill_before_ms > 0) lines += '\t' + std::to_string(c.backfill_before_ms);  // [backfill] a 7th field
  }
  args.push_back(number_text(max_bonus));
  args.push_back(std::to_string(eligible.size()));
  args.push_back(std::move(lines));
  args.push_back(record_held ? "1" : "");
  // [workflows] 22-32, the workflow keys, only for a second call: claim.lua stops before
  // an expired workflow step without them (a key costs the call ~1.1k instructions).
  ClaimOutcome out;
  for (bool with_workflow_keys_sent : {false, true}) {
    if (with_workflow_keys_sent) {
      claim_keys = with_workflow_keys(std::move(claim_keys), queue);
      args[3] = std::to_string(count - static_cast<int>(out.jobs.size()));
    }
    auto reply = redis_.eval("claim", claim_keys, args);
    const auto status = status_of(reply.elements.at(0).str);
    if (status != TransitionStatus::ok) {
      if (!out.jobs.empty()) break;  // the first call's jobs are claimed: they are the answer
      out.status = status;
      if (status == TransitionStatus::stale) out.current_version = reply.elements.at(1).str;
      break;
    }
    out.status = status;
    for (const auto& j : reply.elements.at(1).elements) {
      auto& job = out.jobs.emplace_back(JobRecord::from_flat_array(j));
      hints().remember_claimed(redis_.endpoint().describe() + '|' + job.id(), queue, job.has("workflow_id"));
    }
    const auto& blocked = reply.elements.at(2).elements;
    out.budget_blocked.clear();  // a second call's list is the current one
    for (std::size_t i = 0; i + 3 < blocked.size(); i += 4)
      out.budget_blocked.push_back({blocked[i].str, blocked[i + 1].integer, blocked[i + 2].integer, blocked[i + 3].str});
    out.rate_limited = reply.elements.size() > 3 ? reply.elements[3].str : std::string();
    if (reply.elements.size() < 5 || reply.elements[4].str != "1") break;
  }
  return out;
}

ClassHeads ClaimStore::class_heads(const std::string& queue, long long offset, long long count) {
  const auto replies = redis_.pipeline({{"ZRANGE", keys::class_heads(queue), std::to_string(offset), std::to_string(offset + count - 1), "WITHSCORES"},
                                        {"HGET", keys::config(queue), "policy"}});
  ClassHeads out;
  out.fair = replies.size() > 1 && replies[1].str == "fair";
  const auto& flat = replies.at(0).elements;
  out.heads.reserve(flat.size() / 2);
  for (std::size_t i = 0; i + 1 < flat.size(); i += 2) out.heads.emplace_back(flat[i].str, std::strtod(flat[i + 1].str.c_str(), nullptr));
  return out;
}

// [gangs]
GangClaim ClaimStore::claim_gang(const std::string& queue, const GangMemberInfo& member,
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

}  // namespace ojs::broker
