#include "broker/store/queue_directory.hpp"

#include <algorithm>

#include "broker/store/job_index_store.hpp"
#include "broker/store/job_store_internal.hpp"
#include "broker/store/reply_integer.hpp"
#include "broker/store/settle.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker {

std::vector<std::string> QueueDirectory::queues() {
  auto v = redis_.command({"HKEYS", keys::queue_directory});
  std::vector<std::string> out;
  for (const auto& e : v.elements) out.push_back(e.str);
  std::sort(out.begin(), out.end());
  return out;
}

std::size_t QueueDirectory::queue_count() { return static_cast<std::size_t>(redis_.command({"HLEN", keys::queue_directory}).integer); }

bool QueueDirectory::delete_queue_if_empty(const std::string& queue) {
  // The ready and diagnosis keys of each class are found by the script, from the
  // classes hash as it is when the script runs (delete_queue.lua). The seq stays: a
  // queue created again under the same name goes on from it, so no FIFO sequence
  // number repeats.
  const std::vector<std::string> ks{keys::classes(queue), keys::ready_prefix(queue), keys::active(queue),
                                    keys::delayed(queue), keys::dead(queue), keys::config(queue),
                                    keys::diagnosis(queue, ""), keys::classes_version(queue), keys::paused(queue),
                                    keys::stats(queue), keys::events(queue), keys::ledger(queue),
                                    keys::tenant_quotas(queue), keys::tenant_ledger(queue), keys::preempting(queue),
                                    keys::escalations(queue), keys::reservation_waits(queue), keys::class_heads(queue),
                                    keys::rate_window(queue), keys::expiring(queue), keys::finished(queue, "completed"),
                                    keys::finished(queue, "discarded"), keys::finished(queue, "cancelled"),
                                    keys::on_hold(queue), keys::usage(queue), keys::usage_totals(queue),
                                    keys::usage_hours(queue), keys::usage_journal(queue)};
  // Out of the directory first: a PUSH racing the delete re-adds it (reserve_id) and
  // then the script sees its job and refuses.
  redis_.command({"HDEL", keys::queue_directory, queue});
  const auto reply = redis_.eval("delete_queue", ks, {});
  if (reply.elements.at(0).str == "ok") return true;
  redis_.command(detail::queue_directory_entry(queue));
  return false;
}

bool QueueDirectory::queue_exists(const std::string& queue) {
  return redis_.command({"HEXISTS", keys::queue_directory, queue}).integer == 1;
}

void QueueDirectory::register_queue(const std::string& queue) {
  redis_.command(detail::queue_directory_entry(queue));
}

std::string QueueDirectory::classes_version(const std::string& queue) {
  auto v = redis_.command({"GET", keys::classes_version(queue)});
  return v.is_nil() ? "0" : v.str;
}

ClassSet QueueDirectory::load_classes(const std::string& queue) {
  auto replies = redis_.pipeline({{"GET", keys::classes_version(queue)}, {"HGETALL", keys::classes(queue)}});
  ClassSet set;
  set.version = replies[0].is_nil() ? "0" : replies[0].str;
  const auto& arr = replies[1].elements;
  for (std::size_t i = 0; i + 1 < arr.size(); i += 2) {
    if (!arr[i].str.starts_with('#')) set.classes[arr[i].str] = arr[i + 1].str;  // '#' + id: the class's job count
  }
  return set;
}

std::string QueueDirectory::class_json(const std::string& queue, const std::string& class_id) {
  const auto reply = redis_.command({"HGET", keys::classes(queue), class_id});
  return reply.is_nil() ? std::string() : reply.str;
}

QueueDirectory::RateWindow QueueDirectory::rate_window(const std::string& queue, std::int64_t since_ms) {
  const auto since = std::to_string(since_ms);
  const auto replies = redis_.pipeline({{"ZCOUNT", keys::rate_window(queue), since, "+inf"},
                                        {"ZRANGEBYSCORE", keys::rate_window(queue), since, "+inf", "WITHSCORES", "LIMIT", "0", "1"}});
  RateWindow out{replies[0].integer, std::nullopt};
  if (replies[1].elements.size() == 2) {
    try {
      out.oldest_ms = static_cast<std::int64_t>(std::stod(replies[1].elements[1].str));
    } catch (const std::exception&) {
      // an unreadable score: no oldest start to say when the window resets
    }
  }
  return out;
}

std::map<std::string, long long> QueueDirectory::queue_counts(const std::string& queue) {
  const auto classes = load_classes(queue);
  std::vector<std::vector<std::string>> cmds;
  for (const auto& [id, _] : classes.classes) cmds.push_back({"ZCARD", keys::ready(queue, id)});
  cmds.push_back({"ZCARD", keys::active(queue)});
  cmds.push_back({"ZCARD", keys::dead(queue)});
  cmds.push_back({"ZCARD", keys::on_hold(queue)});  // held jobs (state pending)
  // The named counters only: the stats hash also holds the per-minute rollup (m<minute>:<what>).
  static const char* const kCounters[] = {"completed", "discarded", "cancelled", "preempted"};
  std::vector<std::string> hmget{"HMGET", keys::stats(queue)};
  hmget.insert(hmget.end(), std::begin(kCounters), std::end(kCounters));
  cmds.push_back(std::move(hmget));
  auto replies = settled_reads(redis_, queue, cmds);  // the completed and discarded counts are settle.lua's
  std::map<std::string, long long> counts;
  long long available = 0;
  std::size_t i = 0;
  for (; i < classes.classes.size(); ++i) available += replies[i].integer;
  counts["available"] = available;
  counts["active"] = replies[i++].integer;
  counts["dead_letter"] = replies[i++].integer;
  counts["pending"] = replies[i++].integer;
  const auto& stats = replies[i].elements;
  for (std::size_t s = 0; s < std::size(kCounters); ++s) {
    const bool set = s < stats.size() && !stats[s].is_nil();
    if (set || s < 3) counts[kCounters[s]] = set ? std::stoll(stats[s].str) : 0;  // preempted only once counted
  }
  // scheduled and retryable share the delayed index (ojs-admin-api.md §6.1 counts them apart).
  const auto [scheduled, retryable] = JobIndexStore(redis_).delayed_split(queue, kDelayedSplitScan);
  counts["scheduled"] = scheduled;
  counts["retryable"] = retryable;
  counts["delayed"] = scheduled + retryable;  // the earlier name, kept for one release
  return counts;
}

std::map<std::string, long long> QueueDirectory::ready_counts(const std::string& queue, const ClassSet& classes) {
  std::vector<std::vector<std::string>> cmds;
  for (const auto& [id, _] : classes.classes) cmds.push_back({"ZCARD", keys::ready(queue, id)});
  std::map<std::string, long long> out;
  if (cmds.empty()) return out;
  auto replies = redis_.pipeline(cmds);
  std::size_t i = 0;
  for (const auto& [id, _] : classes.classes) out[id] = replies[i++].integer;
  return out;
}

bool QueueDirectory::set_paused(const std::string& queue, bool paused) {
  // The value is when it was paused (ms): a second pause keeps the first time (NX).
  if (paused) redis_.command({"SET", keys::paused(queue), std::to_string(now_ms()), "NX"});
  else redis_.command({"DEL", keys::paused(queue)});
  return paused;
}

std::optional<std::int64_t> QueueDirectory::paused_at(const std::string& queue) {
  const auto v = redis_.command({"GET", keys::paused(queue)});
  if (v.is_nil()) return std::nullopt;
  try {
    return std::stoll(v.str);
  } catch (const std::exception&) {
    return 0;  // paused by a broker that stored "1": the time is unknown
  }
}

bool QueueDirectory::is_paused(const std::string& queue) {
  return redis_.command({"EXISTS", keys::paused(queue)}).integer == 1;
}

BudgetUse QueueDirectory::budget(const std::string& queue) {
  const auto replies = redis_.pipeline(budget_reads(queue));
  return budget_from(replies[0], replies[1]);
}

}  // namespace ojs::broker
