#pragma once
// What the OJS job states mean for scheduling (spec: the job lifecycle).
#include <string_view>

namespace ojs {

// A job in one of these states waits for a worker to take it: the states the
// scheduling pipeline, its diagnosis and its start estimate speak of. `pending`
// is not one (an operator holds the job, or a workflow has not released it);
// `active` and the finished states are past waiting.
inline bool waits_for_worker(std::string_view state) {
  return state == "available" || state == "scheduled" || state == "retryable";
}

// A job in one of these states has ended for good: no attempt follows.
inline bool is_finished(std::string_view state) {
  return state == "completed" || state == "cancelled" || state == "discarded";
}

}  // namespace ojs
