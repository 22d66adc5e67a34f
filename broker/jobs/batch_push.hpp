// Batch PUSH (POST /ojs/v1/jobs/batch): every job is validated as PUSH would
// validate it alone, then all are stored by one script, or none are.
#pragma once
#include <nlohmann/json.hpp>

#include <cstddef>

#include "broker/jobs/push_service.hpp"
#include "broker/store/job_store.hpp"
#include "broker/store/queue_directory.hpp"

namespace ojs::broker {

inline constexpr std::size_t kMaxBatchJobs = 1000;  // jobs per batch (docs/operations.md)

// body = {"jobs": [EnqueueRequest, ...]}; returns {"jobs": [envelope...], "count": n}.
// Throws OjsError: the first refused job's code, with every refusal in
// details.errors ({index, code, message, details}) and field "jobs[i].<field>";
// 422 `limit: max_queues` when its new queues together pass `max_queues` (0 = none).
// What batch PUSH uses (wired in app.cpp).
struct BatchPushSources {
  PushService& push;
  QueueDirectory& queues;
  JobStore& transitions;
};

nlohmann::json push_batch(BatchPushSources& s, const nlohmann::json& body, int max_queues);

}  // namespace ojs::broker
