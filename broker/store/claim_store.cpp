// Claims: the snapshot a claim is decided over (and a fair queue's candidates,
// fair_candidates.lua), its commit (claim.lua) and gangs' (claim_gang.lua); every
// key each script touches is declared in its header.
#include "broker/store/claim_store.hpp"

#include <algorithm>
#include <cstdlib>

#include "broker/store/job_store_internal.hpp"
#include "broker/store/priority_score.hpp"
#include "broker/store/reply_integer.hpp"

namespace ojs::broker {

using detail::hints;
using detail::status_of;
using detail::with_workflow_keys;

namespace {
// claim.lua's reply (the claimed jobs' ids, skipped picks, rate limit) into `out`;
// whether it stopped before an expired workflow step (call again with the workflow keys).
bool read_claim_reply(const RedisValue& reply, ClaimOutcome& out) {
  for (const auto& id : reply.elements.at(1).elements) out.jobs.emplace_back().fields.emplace("id", id.str);
  const auto& skipped = reply.elements.at(2).elements;
  out.budget_blocked.clear();  // a second call's list is the current one
  out.passed_over.clear();
  for (std::size_t i = 0; i + 3 < skipped.size(); i += 4) {
    const auto& why = skipped[i + 3].str;
    if (why == "gone" || why == "held")
      out.passed_over.emplace_back(skipped[i].str, why);
    else
      out.budget_blocked.push_back({skipped[i].str, skipped[i + 1].integer, skipped[i + 2].integer, why});
  }
  out.rate_limited = reply.elements.size() > 3 ? reply.elements[3].str : std::string();
  if (reply.elements.size() > 5) out.promoted += reply.elements[5].integer;
  return reply.elements.size() > 4 && reply.elements[4].str == "1";
}

// claim.lua's KEYS 1-18.
std::vector<std::string> claim_keys_of(const std::string& queue, const std::string& worker_id) {
  return {keys::classes_version(queue), keys::paused(queue),        keys::delayed(queue),     keys::active(queue),
          keys::seq(queue),             keys::events(queue),        keys::config(queue),      keys::ledger(queue),
          keys::tenant_quotas(queue),   keys::tenant_ledger(queue), keys::job_prefix(queue),  keys::ready_prefix(queue),
          keys::stats(queue),           keys::rate_window(queue),   keys::class_heads(queue), keys::held(queue, worker_id),
          keys::finished_prefix(queue), keys::usage(queue)};
}

// The snapshot's reads besides the heads: policy and quota flag, budget limits, use.
void add_snapshot_reads(std::vector<std::vector<std::string>>& commands, const std::string& queue) {
  commands.push_back({"HMGET", keys::config(queue), "policy", "tenant_quotas"});
  for (auto& c : budget_reads(queue)) commands.push_back(std::move(c));
  commands.push_back({"ZRANGEBYSCORE", keys::delayed(queue), "-inf", "+inf", "WITHSCORES", "LIMIT", "0", "1"});
  commands.push_back({"TIME"});
  commands.push_back({"GET", keys::classes_version(queue)});
}
void read_snapshot(const std::vector<RedisValue>& replies, std::size_t first, ClaimSnapshot& out) {
  const auto& flags = replies.at(first).elements;
  out.fair = flags.size() > 0 && flags[0].str == "fair";
  out.tenant_quotas = flags.size() > 1 && flags[1].type != RedisValue::Type::nil;
  out.budget = budget_from(replies.at(first + 1), replies.at(first + 2));
  const auto& earliest = replies.at(first + 3).elements;
  if (earliest.size() > 1) out.earliest_delayed_ms = static_cast<std::int64_t>(std::strtod(earliest[1].str.c_str(), nullptr));
  if (const auto clock = time_reply_ms(replies.at(first + 4))) out.now_ms = *clock;
  const auto& version = replies.at(first + 5);
  if (version.type != RedisValue::Type::nil) out.classes_version = version.str;
}
}  // namespace

ClaimOutcome ClaimStore::commit(const std::string& queue, const std::string& worker_id,
                                std::optional<std::int64_t> request_visibility_ms, std::int64_t default_visibility_ms,
                                int count, const std::string& classes_version, const std::vector<CommitPick>& picks,
                                bool record_held, bool fair, bool promote_due) {
  std::string lines;
  for (const auto& p : picks) {
    lines += '\n';
    lines += p.class_id;
    lines += '\t';
    lines += p.job_id;
    lines += '\t';
    lines += std::to_string(p.hold_enqueued_after_ms);
    lines += '\t';
    lines += std::to_string(p.gpus);
    lines += '\t';
    lines += p.devices_json;
    lines += '\t';
    lines += std::to_string(p.gpu_memory_mb);
    lines += '\t';
    lines += std::to_string(p.tpu_chips);
  }
  std::vector<std::string> args{worker_id,      optional_text(request_visibility_ms), std::to_string(default_visibility_ms),
                                std::to_string(count), classes_version,           score_band_arg(),
                                record_held ? "1" : "", std::move(lines), fair ? "1" : "", promote_due ? "1" : "0"};
  auto claim_keys = claim_keys_of(queue, worker_id);
  // 19-29, the workflow keys, only for a second call: claim.lua stops
  // before an expired workflow step without them and says so (a key costs the call
  // ~1.1k instructions, so they go only then).
  ClaimOutcome out;
  for (bool second : {false, true}) {
    if (second) {
      claim_keys = with_workflow_keys(std::move(claim_keys), queue);
      args[3] = std::to_string(count - static_cast<int>(out.jobs.size()));
    }
    const auto reply = redis_.eval("claim", claim_keys, args);
    const auto status = status_of(reply.elements.at(0).str);
    if (status != TransitionStatus::ok) {
      if (!out.jobs.empty()) break;  // the first call's jobs are claimed: they are the answer
      out.status = status;
      if (status == TransitionStatus::stale) out.current_version = reply.elements.at(1).str;
      break;
    }
    out.status = status;
    if (!read_claim_reply(reply, out)) break;
  }
  read_claimed_jobs(queue, out);
  return out;
}

// The claimed jobs as stored, this attempt's writes included, read natively (one
// pipelined HGETALL each) rather than returned by claim.lua: the document never
// crosses the Lua bridge. A cancel that lands between the two shows in the read
// (state cancelled, stop_action), as the worker's next heartbeat would tell it.
void ClaimStore::read_claimed_jobs(const std::string& queue, ClaimOutcome& out) {
  if (out.jobs.empty()) return;
  std::vector<std::vector<std::string>> reads;
  reads.reserve(out.jobs.size());
  for (const auto& job : out.jobs) reads.push_back({"HGETALL", keys::job(queue, job.id())});
  const auto stored = redis_.pipeline(reads);
  const auto endpoint = redis_.endpoint().describe();
  for (std::size_t i = 0; i < out.jobs.size(); ++i) {
    auto& job = out.jobs[i];
    // A hash gone in between (its queue deleted) leaves the id alone: nothing to run.
    if (i < stored.size() && stored[i].type == RedisValue::Type::array && !stored[i].elements.empty())
      job = JobRecord::from_flat_array(stored[i]);
    hints().remember_claimed(endpoint + '|' + job.id(), queue, job.has("workflow_id"));
  }
}

ClaimSnapshot ClaimStore::class_heads(const std::string& queue, long long offset, long long count) {
  return class_heads_from(redis_.pipeline(class_heads_reads(queue, offset, count)), 0);
}

std::vector<std::vector<std::string>> ClaimStore::class_heads_reads(const std::string& queue, long long offset, long long count) {
  std::vector<std::vector<std::string>> commands{
      {"ZRANGE", keys::class_heads(queue), std::to_string(offset), std::to_string(offset + count - 1), "WITHSCORES"}};
  add_snapshot_reads(commands, queue);
  return commands;
}

ClaimSnapshot ClaimStore::class_heads_from(const std::vector<RedisValue>& replies, std::size_t first) {
  for (std::size_t i = first; i < replies.size(); ++i)
    if (replies[i].type == RedisValue::Type::error) throw std::runtime_error("claim snapshot read: " + replies[i].str);
  ClaimSnapshot out;
  read_snapshot(replies, first + 1, out);
  const auto& flat = replies.at(first).elements;
  out.heads.reserve(flat.size() / 2);
  for (std::size_t i = 0; i + 1 < flat.size(); i += 2) out.heads.emplace_back(flat[i].str, std::strtod(flat[i + 1].str.c_str(), nullptr));
  return out;
}

ClaimSnapshot ClaimStore::heads_of(const std::string& queue, const std::vector<std::string>& class_ids) {
  std::vector<std::vector<std::string>> commands;
  if (!class_ids.empty()) {
    std::vector<std::string> zmscore{"ZMSCORE", keys::class_heads(queue)};
    zmscore.insert(zmscore.end(), class_ids.begin(), class_ids.end());
    commands.push_back(std::move(zmscore));
  }
  add_snapshot_reads(commands, queue);
  const auto replies = redis_.pipeline(commands);
  ClaimSnapshot out;
  const std::size_t first = class_ids.empty() ? 0 : 1;
  read_snapshot(replies, first, out);
  if (first == 0) return out;
  const auto& scores = replies.at(0).elements;
  for (std::size_t i = 0; i < scores.size() && i < class_ids.size(); ++i)
    if (scores[i].type != RedisValue::Type::nil) out.heads.emplace_back(class_ids[i], std::strtod(scores[i].str.c_str(), nullptr));
  std::stable_sort(out.heads.begin(), out.heads.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  return out;
}

ReadyDetail ClaimStore::ready_detail(const std::string& queue, const std::vector<std::string>& class_ids, int depth,
                                     bool with_fields) {
  ReadyDetail out;
  std::vector<std::vector<std::string>> commands;
  for (const auto& id : class_ids)
    commands.push_back({"ZRANGE", keys::ready(queue, id), "0", std::to_string(std::max(depth, 1) - 1), "WITHSCORES"});
  if (with_fields)
    for (auto& c : tenant_quota_reads(queue)) commands.push_back(std::move(c));
  if (commands.empty()) return out;
  const auto replies = redis_.pipeline(commands);
  std::vector<ReadyJob*> listed;
  for (std::size_t c = 0; c < class_ids.size(); ++c) {
    auto& jobs = out.jobs[class_ids[c]];
    const auto& flat = replies[c].elements;
    for (std::size_t i = 0; i + 1 < flat.size(); i += 2) jobs.push_back({flat[i].str, std::strtod(flat[i + 1].str.c_str(), nullptr), {}, {}});
  }
  if (!with_fields) return out;
  out.quotas = tenant_quotas_from(replies[class_ids.size()], replies[class_ids.size() + 1]);
  std::vector<std::vector<std::string>> fields;
  for (auto& [id, jobs] : out.jobs)
    for (auto& job : jobs) {
      fields.push_back({"HMGET", keys::job_prefix(queue) + job.id, "tenant", "estimated_duration_s"});
      listed.push_back(&job);
    }
  if (fields.empty()) return out;
  const auto values = redis_.pipeline(fields);
  for (std::size_t i = 0; i < listed.size() && i < values.size(); ++i) {
    const auto& v = values[i].elements;
    if (v.size() > 0) listed[i]->tenant = v[0].str;
    if (v.size() > 1 && v[1].type != RedisValue::Type::nil) {
      char* end = nullptr;
      const double est = std::strtod(v[1].str.c_str(), &end);
      if (end != v[1].str.c_str()) listed[i]->estimated_duration_s = est;
    }
  }
  return out;
}

FairDetail ClaimStore::fair_detail(const std::string& queue, const std::vector<std::string>& class_ids, int depth,
                                   bool with_quotas) {
  std::vector<std::string> args{std::to_string(std::max(depth, 1))};
  args.insert(args.end(), class_ids.begin(), class_ids.end());
  // No fold first: an attempt's end takes its amounts out of the held use
  // itself, and its use stays counted until the maintenance pass folds it.
  std::vector<std::vector<std::string>> commands{
      RedisPool::script_call("fair_candidates", {keys::config(queue), keys::ready_prefix(queue), keys::job_prefix(queue), keys::usage(queue)},
                             args)};
  if (with_quotas)
    for (auto& c : tenant_quota_reads(queue)) commands.push_back(std::move(c));
  const auto replies = redis_.pipeline(commands);
  for (const auto& reply : replies)
    if (reply.type == RedisValue::Type::error) throw std::runtime_error("fair claim reads: " + reply.str);
  const auto& r = replies.at(0);
  FairDetail out;
  const auto& e = r.elements;
  if (e.size() < 3) throw std::runtime_error("malformed fair_candidates reply");
  out.layout_json = e[0].str;
  out.half_life_ms = e[1].str;
  for (std::size_t i = 0; i + 2 < e[2].elements.size(); i += 3)
    out.usage.push_back({e[2].elements[i].str, e[2].elements[i + 1].str, e[2].elements[i + 2].str});
  for (std::size_t c = 3; c < e.size(); ++c) {
    const auto& cls = e[c].elements;
    if (cls.size() < 2) continue;
    auto& list = out.classes[cls[0].str];
    const auto& flat = cls[1].elements;
    for (std::size_t i = 0; i + 6 < flat.size(); i += 7) {
      FairCandidate f{std::atoi(flat[i].str.c_str()), std::atoi(flat[i + 1].str.c_str()), flat[i + 2].str,
                      std::strtod(flat[i + 3].str.c_str(), nullptr), flat[i + 4].str, std::nullopt,
                      std::strtoll(flat[i + 6].str.c_str(), nullptr, 10)};
      if (!flat[i + 5].str.empty()) f.cpus = std::strtod(flat[i + 5].str.c_str(), nullptr);
      list.push_back(std::move(f));
    }
  }
  if (with_quotas) out.quotas = tenant_quotas_from(replies.at(1), replies.at(2));
  return out;
}

// A gang FETCH's read: the forming gang, the growing gangs and the eligible classes' heads.
GangCandidates ClaimStore::gang_candidates(const std::string& queue, const std::vector<GangClass>& eligible) {
  std::vector<std::string> read_keys{keys::gangs(queue), keys::job_prefix(queue), keys::ready_prefix(queue),
                                     keys::gangs_growing(queue), keys::config(queue)};
  for (const auto& c : eligible) read_keys.push_back(keys::ready(queue, c.id));
  const auto reply = redis_.eval("gang_candidates", read_keys, {});
  const auto& e = reply.elements;
  if (e.size() != eligible.size() + 4) throw std::runtime_error("malformed gang_candidates reply");
  GangCandidates out;
  out.now_ms = integer_of(e[0]).value_or(0);
  if (const auto& f = e[1].elements; f.size() >= 9) {
    out.forming = GangCandidates::Forming{f[0].str, f[1].str, f[2].str, f[3].str, f[4].str, f[5].str, integer_of(f[6]), {}, f[8].str};
    if (!f[7].str.empty()) out.forming->score = std::strtod(f[7].str.c_str(), nullptr);
  }
  for (const auto& g : e[2].elements) {
    const auto& f = g.elements;
    if (f.size() < 10) continue;
    out.growing.push_back({f[0].str, f[1].str, f[2].str, f[3].str, f[4].str, f[5].str,
                           static_cast<int>(integer_of(f[6]).value_or(0)), !f[7].str.empty(), std::strtod(f[8].str.c_str(), nullptr),
                           f[9].str});
  }
  out.fair_layout_json = e[3].str;
  for (std::size_t c = 0; c < eligible.size(); ++c) {
    const auto& h = e[c + 4].elements;
    if (h.size() < 6) continue;
    out.heads.push_back(
        {eligible[c].id, h[0].str, std::strtod(h[1].str.c_str(), nullptr), integer_of(h[2]), integer_of(h[3]), h[4].str, h[5].str});
  }
  return out;
}

GangClaim ClaimStore::claim_gang(const std::string& queue, const GangMemberInfo& member,
                                 std::optional<std::int64_t> request_visibility_ms, std::int64_t default_visibility_ms,
                                 const GangPick& pick) {
  std::vector<std::string> gang_keys{keys::paused(queue),  keys::job_prefix(queue),    keys::ready_prefix(queue),
                                     keys::gangs(queue),   keys::gang_deliveries(queue), keys::active(queue),
                                     keys::events(queue),  keys::config(queue),        keys::ledger(queue),
                                     keys::tenant_quotas(queue), keys::tenant_ledger(queue), keys::seq(queue),
                                     keys::class_heads(queue), keys::stats(queue), keys::rate_window(queue),
                                     keys::held(queue, member.worker_id)};
  for (auto& k : keys::workflow_transition_keys(queue)) gang_keys.push_back(std::move(k));  // 17-27
  gang_keys.push_back(keys::finished_prefix(queue));  // 28: an expired member is finished
  gang_keys.push_back(keys::usage(queue));            // 29: a started gang's held use under `fair`
  std::vector<std::string> args{member.worker_id, optional_text(request_visibility_ms), std::to_string(default_visibility_ms),
                                member.address, member.port};
  if (pick.kind != GangPick::Kind::none && pick.cls) {
    const auto& c = *pick.cls;
    gang_keys.push_back(keys::ready(queue, c.id));    // 30: the picked class's ready set
    gang_keys.push_back(keys::gangs_growing(queue));  // 31: the running elastic gangs that may grow
    const char* kind = pick.kind == GangPick::Kind::join ? "join" : pick.kind == GangPick::Kind::grow ? "grow" : "form";
    for (auto& a : {std::string(kind), pick.job_id, c.id,
                    std::to_string(c.gpus), c.devices_json, c.label_value, std::to_string(c.gpu_memory_mb)})
      args.push_back(a);
  } else {
    args.insert(args.end(), 7, "");
  }
  args.insert(args.end(), pick.expired.begin(), pick.expired.end());
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
  } else if (kind == "stale") {
    out.kind = GangClaim::Kind::stale;
  } else if (kind == "blocked") {
    out.kind = GangClaim::Kind::blocked;
    out.blocked = {reply.elements.at(1).str, reply.elements.at(2).integer, reply.elements.at(3).integer,
                   reply.elements.at(4).str};
  }
  return out;
}

}  // namespace ojs::broker
