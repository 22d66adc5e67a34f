// Jobs of one queue in one state, for admins (GET /ojs/v1/admin/queues/{name}/jobs,
// `ojsctl jobs list`). Read from the indexes the state machine keeps: the ready
// sets (available, in FETCH order), active, delayed (scheduled and retryable) and
// dead letter. Terminal states other than dead letter are not indexed.
#pragma once
#include <nlohmann/json.hpp>

#include <string>

#include "broker/jobs/job_service.hpp"

namespace ojs::broker::admin {

inline constexpr const char* kListableStates[] = {"available", "active", "scheduled", "retryable", "dead"};
bool is_listable_state(const std::string& state);

// {queue, state, jobs[{id, type, state, attempt, priority, gpus, tenant?, worker_id?, enqueued_at?, started_at?}], count}
nlohmann::json list_jobs(JobService& service, const std::string& queue, const std::string& state, int limit);

}  // namespace ojs::broker::admin
