#include "broker/store/job_index_store.hpp"

#include <algorithm>
#include <utility>

#include "broker/store/keys.hpp"
#include "broker/store/settle.hpp"

namespace ojs::broker {

namespace {

// A reply's elements as text (an index read's ids).
std::vector<std::string> texts_of(const RedisValue& reply) {
  std::vector<std::string> out;
  for (const auto& e : reply.elements) out.push_back(e.str);
  return out;
}

}  // namespace

std::vector<std::string> JobIndexStore::available(const std::string& queue, const ClassSet& classes, int limit) {
  std::vector<std::vector<std::string>> cmds;
  for (const auto& [id, _] : classes.classes)
    cmds.push_back({"ZRANGE", keys::ready(queue, id), "0", std::to_string(limit - 1), "WITHSCORES"});
  if (cmds.empty()) return {};
  std::vector<std::pair<double, std::string>> ranked;
  for (const auto& reply : redis_.pipeline(cmds))
    for (std::size_t i = 0; i + 1 < reply.elements.size(); i += 2)
      ranked.emplace_back(std::stod(reply.elements[i + 1].str), reply.elements[i].str);
  std::sort(ranked.begin(), ranked.end());
  std::vector<std::string> out;
  for (std::size_t i = 0; i < ranked.size() && static_cast<int>(i) < limit; ++i) out.push_back(ranked[i].second);
  return out;
}

std::vector<std::string> JobIndexStore::active(const std::string& queue, int limit) {
  return ids({"ZRANGE", keys::active(queue), "0", std::to_string(limit - 1)});
}

std::vector<std::string> JobIndexStore::dead(const std::string& queue, int limit) {
  return ids({"ZREVRANGE", keys::dead(queue), "0", std::to_string(limit - 1)});
}

std::vector<std::string> JobIndexStore::on_hold(const std::string& queue, int limit) {
  return ids({"ZRANGE", keys::on_hold(queue), "0", std::to_string(limit - 1)});
}

std::vector<std::string> JobIndexStore::delayed(const std::string& queue, int limit) {
  return ids({"ZRANGE", keys::delayed(queue), "0", std::to_string(limit - 1)});
}

long long JobIndexStore::count(const std::string& queue, const std::string& index) {
  const auto key = index == "active"    ? keys::active(queue)
                   : index == "dead"    ? keys::dead(queue)
                   : index == "on_hold" ? keys::on_hold(queue)
                                        : keys::delayed(queue);
  return redis_.command({"ZCARD", key}).integer;
}

std::pair<long long, long long> JobIndexStore::delayed_split(const std::string& queue, int limit) {
  const auto total = count(queue, "delayed");
  const auto listed = delayed(queue, limit);
  std::vector<std::vector<std::string>> cmds;
  for (const auto& id : listed) cmds.push_back({"HGET", keys::job(queue, id), "state"});
  long long retryable = 0;
  if (!cmds.empty())
    for (const auto& reply : redis_.pipeline(cmds))
      if (!reply.is_nil() && reply.str == "retryable") ++retryable;
  return {total - retryable, retryable};
}

// The completed and discarded indexes are written by settle.lua, from the end lines
// of ACKs and NACKs: settled before it is read, each holds every job whose ending
// call answered.
namespace {
bool settled_index(const std::string& state) { return state == "completed" || state == "discarded"; }
}  // namespace

void JobIndexStore::settle_finished(const std::string& queue, const std::string& state) {
  if (settled_index(state)) settle(redis_, {queue});
}

// A read of a finished index; of one settle.lua writes, behind the queue's settling
// in the same round trip.
RedisValue JobIndexStore::finished_read(const std::string& queue, const std::string& state, std::vector<std::string> command) {
  if (!settled_index(state)) return redis_.command(command);
  return settled_reads(redis_, queue, {std::move(command)}).front();
}

std::vector<std::string> JobIndexStore::finished(const std::string& queue, const std::string& state, std::int64_t since_ms,
                                                 int limit) {
  return texts_of(finished_read(queue, state, {"ZREVRANGEBYSCORE", keys::finished(queue, state), "+inf",
                                               std::to_string(since_ms), "LIMIT", "0", std::to_string(limit)}));
}

long long JobIndexStore::finished_count(const std::string& queue, const std::string& state, std::int64_t since_ms) {
  return finished_read(queue, state, {"ZCOUNT", keys::finished(queue, state), std::to_string(since_ms), "+inf"}).integer;
}

long long JobIndexStore::trim_finished(const std::string& queue, const std::string& state, std::int64_t cutoff_ms,
                                       long long max_jobs) {
  settle_finished(queue, state);
  const auto key = keys::finished(queue, state);
  const auto replies = redis_.pipeline({{"ZREMRANGEBYSCORE", key, "-inf", "(" + std::to_string(cutoff_ms)},
                                        {"ZREMRANGEBYRANK", key, "0", std::to_string(-max_jobs - 1)}});
  return replies[0].integer + replies[1].integer;
}

std::vector<std::string> JobIndexStore::purge_finished(const std::string& queue, const std::string& state, std::int64_t before_ms,
                                                       int limit) {
  std::vector<std::string> out;
  settle_finished(queue, state);
  const auto reply = redis_.eval("purge_finished", {keys::finished_prefix(queue), keys::job_prefix(queue), keys::dead(queue),
                                                   keys::log_prefix(queue), keys::classes(queue), keys::classes_version(queue)},
                                 {state, std::to_string(before_ms), std::to_string(limit)});
  for (const auto& e : reply.elements) out.push_back(e.str);
  return out;
}

std::vector<std::optional<StateAndTenant>> JobIndexStore::states_and_tenants(const std::string& queue,
                                                                            const std::vector<std::string>& ids) {
  std::vector<std::optional<StateAndTenant>> out;
  if (ids.empty()) return out;
  std::vector<std::vector<std::string>> cmds;
  cmds.reserve(ids.size());
  for (const auto& id : ids) cmds.push_back({"HMGET", keys::job(queue, id), "state", "tenant"});
  for (const auto& reply : redis_.pipeline(cmds)) {
    const auto& f = reply.elements;
    if (f.size() < 2 || f[0].is_nil()) out.emplace_back();
    else out.push_back(StateAndTenant{f[0].str, f[1].is_nil() ? std::string() : f[1].str});
  }
  return out;
}

std::vector<std::string> JobIndexStore::ids(const std::vector<std::string>& command) { return texts_of(redis_.command(command)); }

}  // namespace ojs::broker
