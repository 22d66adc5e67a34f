#include "broker/store/estimate_store.hpp"

#include <algorithm>
#include <cstdio>

#include "broker/store/keys.hpp"
#include "broker/store/settle.hpp"

namespace ojs::broker {

namespace {

const std::vector<std::string> kWaitingFields = {"id",         "class",           "type",           "tenant", "state",
                                                 "timeout_ms", "next_attempt_at", "estimated_duration_s", "enqueued_at",
                                                 "rank_base"};
// What a finished job teaches (completed_runs).
const std::vector<std::string> kRanFields = {"started_at", "completed_at", "estimated_duration_s", "attempt",
                                             "estimate_asked_at", "estimate_late_at"};

// A score as ZRANGEBYSCORE / ZCOUNT bounds take it: the exact integer.
std::string score_text(double score) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", score);
  return buf;
}

double number(const RedisValue& v) {
  try {
    return std::stod(v.str);
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

std::optional<double> EstimateStore::ready_score(const std::string& queue, const std::string& class_id, const std::string& id) {
  const auto v = redis_.command({"ZSCORE", keys::ready(queue, class_id), id});
  if (v.is_nil() || v.str.empty()) return std::nullopt;
  return number(v);
}

std::vector<ReadyEntry> EstimateStore::ready_jobs(const std::string& queue, const ClassSet& classes, int limit, bool* more) {
  std::vector<std::vector<std::string>> cmds;
  std::vector<std::string> ids;
  for (const auto& [class_id, canonical] : classes.classes) {
    // One more than the limit from each class tells whether any was left out.
    cmds.push_back({"ZRANGE", keys::ready(queue, class_id), "0", std::to_string(limit), "WITHSCORES"});
    ids.push_back(class_id);
  }
  std::vector<ReadyEntry> out;
  if (cmds.empty()) return out;
  const auto replies = redis_.pipeline(cmds);
  for (std::size_t c = 0; c < replies.size(); ++c)
    for (std::size_t i = 0; i + 1 < replies[c].elements.size(); i += 2)
      out.push_back({replies[c].elements[i].str, ids[c], number(replies[c].elements[i + 1])});
  std::sort(out.begin(), out.end(), [](const ReadyEntry& a, const ReadyEntry& b) {
    return a.score != b.score ? a.score < b.score : a.id < b.id;
  });
  if (more) *more = out.size() > static_cast<std::size_t>(limit);
  if (out.size() > static_cast<std::size_t>(limit)) out.resize(static_cast<std::size_t>(limit));
  return out;
}

long long EstimateStore::ready_below(const std::string& queue, const ClassSet& classes, double score) {
  std::string below = "(";  // exclusive; appended, not "(" + text (GCC 12's false -Wrestrict)
  below += score_text(score);
  std::vector<std::vector<std::string>> cmds;
  for (const auto& [class_id, canonical] : classes.classes) cmds.push_back({"ZCOUNT", keys::ready(queue, class_id), "-inf", below});
  long long n = 0;
  if (cmds.empty()) return n;
  for (const auto& r : redis_.pipeline(cmds)) n += r.integer;
  return n;
}

std::vector<std::optional<JobRecord>> EstimateStore::waiting_fields(const std::string& queue, const std::vector<std::string>& ids) {
  std::vector<std::vector<std::string>> cmds;
  for (const auto& id : ids) cmds.push_back(JobRecord::read_fields(keys::job(queue, id), kWaitingFields));
  std::vector<std::optional<JobRecord>> out;
  if (cmds.empty()) return out;
  for (const auto& reply : redis_.pipeline(cmds)) {
    if (reply.elements.empty() || reply.elements[0].is_nil()) {
      out.emplace_back();
      continue;
    }
    JobRecord job = JobRecord::from_fields(kWaitingFields, reply.elements);
    job.fields["queue"] = queue;
    out.push_back(std::move(job));
  }
  return out;
}

EstimateStore::CompletedRuns EstimateStore::completed_runs(const std::string& queue, std::size_t limit) {
  CompletedRuns out;
  if (limit == 0) return out;
  // The completed index is settle.lua's: read behind the queue's settling.
  const auto ids = settled_reads(redis_, queue, {{"ZREVRANGE", keys::finished(queue, "completed"), "0", std::to_string(limit - 1)}}).front();
  std::vector<std::vector<std::string>> cmds;
  for (const auto& id : ids.elements) cmds.push_back(JobRecord::read_fields(keys::job(queue, id.str), kRanFields));
  if (cmds.empty()) return out;
  for (const auto& reply : redis_.pipeline(cmds)) {
    const JobRecord job = JobRecord::from_fields(kRanFields, reply.elements);
    const auto started = job.get_int("started_at"), completed = job.get_int("completed_at"),
               declared = job.get_int("estimated_duration_s");
    if (started && completed && declared && *declared > 0 && *completed >= *started)
      out.ran_vs_declared.push_back(static_cast<double>(*completed - *started) / (static_cast<double>(*declared) * 1000));
    // A later attempt's started_at is not when the job first started: only the first's.
    const auto asked = job.get_int("estimate_asked_at"), late = job.get_int("estimate_late_at");
    if (started && asked && late && job.attempt() == 1) out.told.push_back({*asked, *late, *started});
  }
  return out;
}

void EstimateStore::note_estimate(const std::string& queue, const std::string& id, std::int64_t asked_ms, std::int64_t late_ms) {
  redis_.eval("estimate_note", {keys::job(queue, id)}, {std::to_string(asked_ms), std::to_string(late_ms)});
}

std::map<std::string, std::vector<long long>> EstimateStore::run_times(const std::string& queue, const std::vector<std::string>& types) {
  std::vector<std::vector<std::string>> cmds;
  for (const auto& type : types) cmds.push_back({"LRANGE", keys::run_times(queue, type), "0", std::to_string(keys::run_times_kept - 1)});
  std::map<std::string, std::vector<long long>> out;
  if (cmds.empty()) return out;
  const auto replies = settled_reads(redis_, queue, cmds);  // the run times are settle.lua's
  for (std::size_t i = 0; i < replies.size(); ++i) {
    auto& times = out[types[i]];
    for (const auto& e : replies[i].elements) {
      try {
        times.push_back(std::stoll(e.str));
      } catch (const std::exception&) {
      }
    }
  }
  return out;
}

}  // namespace ojs::broker
