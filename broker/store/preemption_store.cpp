#include "broker/store/preemption_store.hpp"

#include <cstdio>
#include <stdexcept>

#include "broker/store/keys.hpp"
#include "broker/store/reply_integer.hpp"

namespace ojs::broker {

namespace {

std::string index_key(const std::string& queue, PreemptionStore::Index index) {
  switch (index) {
    case PreemptionStore::Index::preempting: return keys::preempting(queue);
    case PreemptionStore::Index::escalations: return keys::escalations(queue);
    default: return keys::reservation_waits(queue);
  }
}

std::string whole(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

std::map<std::string, std::string> as_map(const RedisValue& flat) {
  std::map<std::string, std::string> out;
  for (std::size_t i = 0; i + 1 < flat.elements.size(); i += 2) out[flat.elements[i].str] = flat.elements[i + 1].str;
  return out;
}

}  // namespace

bool PreemptionStore::hold_lease(const std::string& owner, std::int64_t ttl_ms) {
  return redis_.eval("lease", {keys::preemption_leader}, {owner, std::to_string(ttl_ms)}).integer == 1;
}

std::vector<std::string> PreemptionStore::due(const std::string& queue, Index index, std::int64_t now_ms) {
  auto v = redis_.command({"ZRANGEBYSCORE", index_key(queue, index), "-inf", std::to_string(now_ms), "LIMIT", "0", "100"});
  std::vector<std::string> out;
  for (const auto& e : v.elements) out.push_back(e.str);
  return out;
}

void PreemptionStore::drop(const std::string& queue, Index index, const std::string& id) {
  redis_.command({"ZREM", index_key(queue, index), id});
}

bool PreemptionStore::escalate(const JobRecord& job, double new_rank_base, std::optional<double> new_order_base, int from_rank,
                               int to_rank) {
  const auto& q = job.queue();
  auto reply = redis_.eval("escalate",
                           {keys::job(q, job.id()), keys::escalations(q), keys::ready(q, job.get("class")), keys::events(q),
                            keys::class_heads(q)},
                           {job.id(), job.get("rank_base"), whole(new_rank_base), std::to_string(from_rank),
                            std::to_string(to_rank), new_order_base ? whole(*new_order_base) : std::string()});
  return reply.elements.at(0).str == "ok";
}

Transition PreemptionStore::discard_waiting(const JobRecord& job, const std::string& error_json) {
  const auto& q = job.queue();
  // 9-19, the workflow keys, only for a workflow's job (discard_waiting.lua asks for
  // them should the snapshot not name the workflow).
  return JobStore::lean_transition(redis_, "discard_waiting",
                                   {keys::job(q, job.id()), keys::ready(q, job.get("class")), keys::delayed(q), keys::stats(q),
                                    keys::events(q), keys::reservation_waits(q), keys::finished_prefix(q), keys::class_heads(q)},
                                   job.has("workflow_id"), {error_json}, q, job.id());
}

std::optional<std::vector<std::pair<std::string, std::int64_t>>> PreemptionStore::mark(
    const std::string& queue, const std::string& preemptor, const std::string& worker_id,
    const std::vector<PreemptionMark>& victims) {
  std::vector<std::string> script_keys{keys::preempting(queue), keys::events(queue)};
  std::vector<std::string> args{preemptor, worker_id};
  for (const auto& v : victims) {
    script_keys.push_back(keys::job(queue, v.job_id));
    args.insert(args.end(), {v.job_id, std::to_string(v.grace_period_s), v.checkpoint ? "1" : "0"});
  }
  auto reply = redis_.eval("preempt", script_keys, args);
  if (reply.elements.at(0).str != "ok") return std::nullopt;
  std::vector<std::pair<std::string, std::int64_t>> out;
  const auto& m = reply.elements.at(1).elements;
  for (std::size_t i = 0; i + 1 < m.size(); i += 2) out.emplace_back(m[i].str, std::stoll(m[i + 1].str));
  return out;
}

std::optional<std::string> PreemptionStore::forming_gang(const std::string& queue) {
  auto forming = redis_.command({"ZRANGE", keys::gangs(queue), "0", "0"});
  if (forming.elements.empty()) return std::nullopt;
  return forming.elements[0].str;
}

std::optional<std::pair<std::string, double>> PreemptionStore::ready_head(const std::string& queue, const std::string& class_id) {
  auto head = redis_.command({"ZRANGE", keys::ready(queue, class_id), "0", "0", "WITHSCORES"});
  if (head.elements.size() < 2) return std::nullopt;
  return std::make_pair(head.elements[0].str, std::stod(head.elements[1].str));
}

std::vector<std::vector<std::string>> guard_mark_reads(const std::string& worker_id) {
  return {{"HGET", keys::holds, worker_id}, {"EXISTS", keys::reservations}};
}

GuardMarks guard_marks_from(const RedisValue& hold, const RedisValue& reservations_exist) {
  GuardMarks g;
  if (!hold.is_nil() && !hold.is_error()) g.hold = hold.str;
  g.reservations = reservations_exist.integer == 1;
  return g;
}

std::map<std::string, std::string> PreemptionStore::holds() { return as_map(redis_.command({"HGETALL", keys::holds})); }

std::optional<std::string> PreemptionStore::hold_of(const std::string& worker_id) {
  auto v = redis_.command({"HGET", keys::holds, worker_id});
  if (v.is_nil()) return std::nullopt;
  return v.str;
}

void PreemptionStore::put_hold(const std::string& worker_id, const std::string& hold_json) {
  redis_.command({"HSET", keys::holds, worker_id, hold_json});
}

void PreemptionStore::drop_hold(const std::string& worker_id) { redis_.command({"HDEL", keys::holds, worker_id}); }

std::optional<std::string> PreemptionStore::backfill_setting(const std::string& queue) {
  auto v = redis_.command({"HGET", keys::config(queue), "backfill"});
  if (v.is_nil()) return std::nullopt;
  return v.str;
}

std::map<std::string, std::string> PreemptionStore::reservations() {
  return as_map(redis_.command({"HGETALL", keys::reservations}));
}

bool PreemptionStore::has_reservations() { return redis_.command({"EXISTS", keys::reservations}).integer == 1; }

void PreemptionStore::put_reservation(const std::string& id, const std::string& json) {
  redis_.command({"HSET", keys::reservations, id, json});
}

bool PreemptionStore::delete_reservation(const std::string& id) {
  return redis_.command({"HDEL", keys::reservations, id}).integer == 1;
}

std::optional<PreemptionStore::FairUsageRead> PreemptionStore::fair_usage(const std::string& queue) {
  const auto replies = redis_.pipeline({{"HMGET", keys::config(queue), "policy", "fair_tenants", "usage_half_life_ms"},
                                        {"HGETALL", keys::usage(queue)},
                                        {"TIME"}});
  for (const auto& reply : replies)
    if (reply.type == RedisValue::Type::error) throw std::runtime_error("fair usage read: " + reply.str);
  const auto& config = replies.at(0).elements;
  if (config.size() < 3 || config[0].str != "fair") return std::nullopt;
  FairUsageRead out;
  out.fair.layout_json = config[1].str;
  out.fair.half_life_ms = config[2].str;
  out.now_ms = time_reply_ms(replies.at(2)).value_or(0);
  // Each name's two fields (_lib_accounting.lua: <name> decayed, <name>|run held),
  // a name listed once whichever of them it has.
  std::map<std::string, FairUsage::Usage> by_name;
  const auto& flat = replies.at(1).elements;
  for (std::size_t i = 0; i + 1 < flat.size(); i += 2) {
    const std::string& field = flat[i].str;
    const auto bar = field.find('|');
    if (bar == std::string::npos) {
      auto& u = by_name[field];
      u.name = field;
      u.decayed = flat[i + 1].str;
    } else if (field.compare(bar, std::string::npos, "|run") == 0) {
      auto& u = by_name[field.substr(0, bar)];
      u.name = field.substr(0, bar);
      u.held = flat[i + 1].str;
    }
  }
  for (auto& [name, u] : by_name) out.fair.usage.push_back(std::move(u));
  return out;
}

}  // namespace ojs::broker
