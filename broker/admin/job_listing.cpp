#include "broker/admin/job_listing.hpp"

#include <algorithm>

#include "broker/store/job_index_store.hpp"
#include "ojs/core/time.hpp"
#include "ojs/core/job_states.hpp"

namespace ojs::broker::admin {

using nlohmann::json;

namespace {

json summary(const JobRecord& r) {
  json j = {{"id", r.id()}, {"type", r.get("type")}, {"state", r.state()}, {"attempt", r.attempt()},
            {"priority", r.priority()}, {"gpus", r.gpu_count()}};
  for (const char* f : {"tenant", "worker_id"})
    if (!r.get(f).empty()) j[f] = r.get(f);
  for (const char* f : {"created_at", "enqueued_at", "started_at", "next_attempt_at", "scheduled_at", "completed_at",
                        "discarded_at", "cancelled_at"})
    if (auto ms = r.get_int(f)) j[f] = format_rfc3339(*ms);
  return j;
}

const FinishedRetention kUnbounded{{}, 1LL << 40};

// Up to `limit` ids of the state's index, in its order.
std::vector<std::string> index_ids(JobListingSources& store, const std::string& queue, const std::string& state, int limit,
                                   const FinishedRetention& retention) {
  JobIndexStore& index = store.index;
  if (state == "available") return index.available(queue, store.queues.load_classes(queue), limit);
  if (state == "active") return index.active(queue, limit);
  if (state == "dead") return index.dead(queue, limit);
  if (state == "pending") return index.on_hold(queue, limit);
  if (is_finished_state(state)) {
    const auto age = retention.age_ms.find(state);
    const std::int64_t since = age == retention.age_ms.end() ? 0 : now_ms() - age->second;
    return index.finished(queue, state, since, static_cast<int>(std::min<long long>(limit, retention.max_jobs)));
  }
  return index.delayed(queue, limit);  // scheduled and retryable share it: filtered by state
}

// The index size, for a state whose index holds only jobs of that state.
long long index_total(JobListingSources& store, const std::string& queue, const std::string& state, const FinishedRetention& retention) {
  JobIndexStore& index = store.index;
  if (state == "available") {
    long long n = 0;
    for (const auto& [_, count] : store.queues.ready_counts(queue, store.queues.load_classes(queue))) n += count;
    return n;
  }
  if (state == "active" || state == "dead") return index.count(queue, state);
  if (state == "pending") return index.count(queue, "on_hold");
  const auto age = retention.age_ms.find(state);
  const std::int64_t since = age == retention.age_ms.end() ? 0 : now_ms() - age->second;
  return std::min(index.finished_count(queue, state, since), retention.max_jobs);
}


// The records of `ids` in one queue, read in slices (absent ones dropped).
std::vector<JobRecord> records_of(JobListingSources& store, const std::string& queue, const std::vector<std::string>& ids) {
  constexpr std::size_t kSlice = 500;  // ids per get_many round trip
  std::vector<JobRecord> out;
  for (std::size_t at = 0; at < ids.size(); at += kSlice) {
    std::vector<std::pair<std::string, std::string>> wanted;
    for (std::size_t i = at; i < std::min(ids.size(), at + kSlice); ++i) wanted.emplace_back(queue, ids[i]);
    for (auto& record : store.reads.get_many(wanted))
      if (record) out.push_back(std::move(*record));
  }
  return out;
}

}  // namespace

bool is_listable_state(const std::string& state) {
  return std::any_of(std::begin(kListableStates), std::end(kListableStates), [&](const char* s) { return state == s; });
}

bool is_finished_state(const std::string& state) { return is_finished(state); }

FinishedRetention retention_for(const governance::Retention& configured, const BrokerConfig& config) {
  FinishedRetention r;
  for (const char* state : {"completed", "discarded", "cancelled"}) {
    const auto it = configured.age_ms.find(state);
    r.age_ms[state] = it == configured.age_ms.end() ? config.finished_retention_ms : it->second;
  }
  r.max_jobs = configured.max_jobs.value_or(config.finished_max_jobs);
  return r;
}

void trim_finished(JobListingSources& store, const RetentionOf& retention_of) {
  JobIndexStore& index = store.index;
  const auto now = now_ms();
  for (const auto& queue : store.queues.queues()) {
    const auto retention = retention_of(queue);
    for (const auto& [state, age] : retention.age_ms) index.trim_finished(queue, state, now - age, retention.max_jobs);
  }
}

json list_jobs_page(JobListingSources& store, const JobQuery& q, const RetentionOf& retention_of) {
  const long long offset = static_cast<long long>(q.page - 1) * q.per_page;
  json items = json::array();
  long long total = 0;
  const bool per_record = !q.type.empty() || q.since_ms || q.until_ms || q.state == "scheduled" || q.state == "retryable";
  for (const auto& queue : q.queues) {
    const auto retention = is_finished_state(q.state) ? retention_of(queue) : kUnbounded;
    if (!per_record) {
      // The index holds only this state: its size is the total, and only the page is read.
      const long long here = index_total(store, queue, q.state, retention);
      const long long from = std::max(0LL, offset - total), want = q.per_page - static_cast<long long>(items.size());
      total += here;
      if (want <= 0 || from >= here) continue;
      const auto ids = index_ids(store, queue, q.state, static_cast<int>(std::min(here, from + want)), retention);
      std::vector<std::string> slice(ids.begin() + std::min<long long>(from, ids.size()), ids.end());
      for (const auto& record : records_of(store, queue, slice)) {
        json j = summary(record);
        j["queue"] = queue;
        items.push_back(std::move(j));
      }
      continue;
    }
    for (const auto& record : records_of(store, queue, index_ids(store, queue, q.state, kListScan, retention))) {
      if (q.state != "dead" && record.state() != q.state) continue;
      if (!type_matches(q.type, record.get("type"))) continue;
      const auto created = record.get_int("created_at").value_or(0);
      if ((q.since_ms && created < *q.since_ms) || (q.until_ms && created >= *q.until_ms)) continue;
      if (total++ < offset || static_cast<int>(items.size()) >= q.per_page) continue;
      json j = summary(record);
      j["queue"] = queue;
      items.push_back(std::move(j));
    }
  }
  return {{"items", items}, {"pagination", {{"total", total}, {"page", q.page}, {"per_page", q.per_page}}}};
}

std::map<std::string, long long> active_jobs_by_worker(JobListingSources& store) {
  std::map<std::string, long long> out;
  for (const auto& queue : store.queues.queues())
    for (const auto& [job, worker] : store.reads.active_jobs(queue))
      if (!worker.empty()) ++out[worker];
  return out;
}

json list_jobs(JobListingSources& store, const std::string& queue, const std::string& state, int limit) {
  const auto ids = index_ids(store, queue, state, state == "scheduled" || state == "retryable" ? 4 * limit : limit, kUnbounded);
  json jobs = json::array();
  for (const auto& record : records_of(store, queue, ids)) {
    if (static_cast<int>(jobs.size()) >= limit) break;
    if (state != "dead" && record.state() != state) continue;
    jobs.push_back(summary(record));
  }
  return {{"queue", queue}, {"state", state}, {"jobs", jobs}, {"count", jobs.size()}};
}

bool type_matches(const std::string& pattern, const std::string& type) {
  if (pattern.empty()) return true;
  if (pattern.back() == '*') return type.rfind(pattern.substr(0, pattern.size() - 1), 0) == 0;
  return pattern == type;
}

}  // namespace ojs::broker::admin
