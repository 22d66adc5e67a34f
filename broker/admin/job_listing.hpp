// Jobs by state, for admins (GET /ojs/v1/admin/jobs, the bulk actions, `ojsctl jobs
// list`). Read from the indexes the state machine keeps: the ready sets (available,
// in FETCH order), active, delayed (scheduled and retryable), dead letter, and the
// finished index of each terminal state (completed, discarded, cancelled; newest
// first, bounded by the queue's retention).
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "broker/config.hpp"
#include "broker/governance/queue_config.hpp"
#include "broker/admin/sources.hpp"

namespace ojs::broker::admin {

inline constexpr const char* kListableStates[] = {"available", "active",    "scheduled", "retryable",
                                                  "dead",      "completed", "discarded", "cancelled",
                                                  "pending"};  // held jobs, oldest hold first
bool is_listable_state(const std::string& state);
bool is_finished_state(const std::string& state);  // completed, discarded, cancelled
// A job type against a filter: "" matches any, "train.*" any type it prefixes.
bool type_matches(const std::string& pattern, const std::string& type);

// How far back a queue's finished jobs stay listable, per terminal state, and how many.
struct FinishedRetention {
  std::map<std::string, std::int64_t> age_ms;  // state -> age
  long long max_jobs = 0;
};
using RetentionOf = std::function<FinishedRetention(const std::string& queue)>;
// A queue's: its configuration's `retention`, else --finished-retention-ms / --finished-max-jobs.
FinishedRetention retention_for(const governance::Retention& configured, const BrokerConfig& config);
// Trims every queue's finished index to its retention (the maintenance pass; the
// listing honours the bound between passes by reading only what is within it).
void trim_finished(JobListingSources& s, const RetentionOf& retention_of);

// ojs-admin-api.md §7.1. created_at bounds: since inclusive, until exclusive.
struct JobQuery {
  std::string state = "available";
  std::vector<std::string> queues;
  std::string type;  // exact, or a prefix ending in '*'; empty: any
  std::optional<std::int64_t> since_ms, until_ms;
  int page = 1, per_page = 20;
};
// Jobs read per queue at most when a filter needs each job (type, since, until, or the
// scheduled/retryable split of the delayed index); without one, totals are index sizes.
inline constexpr int kListScan = 10000;

// {items[summary + queue], pagination{total, page, per_page}}
nlohmann::json list_jobs_page(JobListingSources& s, const JobQuery& query, const RetentionOf& retention);

// worker id -> the active jobs it holds, across queues (read from the active
// indexes: a worker without capabilities has no held sets to read).
std::map<std::string, long long> active_jobs_by_worker(JobListingSources& s);

// {queue, state, jobs[{id, type, state, attempt, priority, gpus, created_at, tenant?, worker_id?, ...}], count}
// (the bulk actions; finished states with the broker's default retention)
nlohmann::json list_jobs(JobListingSources& s, const std::string& queue, const std::string& state, int limit);

}  // namespace ojs::broker::admin
