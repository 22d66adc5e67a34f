// Workflows (OJS level 3) in Redis: creation, reads, cancel, and the enqueueing of
// batch callbacks that a job transition marked due (store/lua/_lib_workflows.lua
// advances a workflow inside ack / fail / cancel; see docs/architecture.md).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "broker/store/job_store.hpp"

namespace ojs::broker {

// A batch's callbacks, in the order they are evaluated (spec/ojs-workflows.md §6.3).
inline constexpr const char* kWorkflowCallbackKinds[] = {"on_complete", "on_success", "on_failure"};

// A workflow hash as read: its queue (the queue its jobs share) and fields.
struct WorkflowRecord {
  std::string queue;
  JobRecord hash;  // the workflow's fields (a plain hash record)
};

class WorkflowStore {
 public:
  explicit WorkflowStore(RedisPool& redis) : redis_(redis) {}

  // Enters the workflow id and every job id (`ids`: id -> queue, callbacks
  // included) in the directories, then stores the workflow and its starting jobs
  // in one script (workflow_create.lua). false: an id is taken, nothing started.
  bool create(const std::string& queue, const std::string& id, const std::vector<BatchJob>& starting,
              const std::vector<std::pair<std::string, std::string>>& fields,
              const std::vector<std::pair<std::string, std::string>>& ids);
  // Every workflow id (the directory), newest first (UUIDv7 ids sort by time).
  std::vector<std::string> ids();
  std::optional<WorkflowRecord> get(const std::string& id);
  // workflow_cancel.lua: ok (the workflow's fields in .job), not_found or conflict (state in .detail).
  Transition cancel(const std::string& queue, const std::string& id);
  // Enqueues the batch callbacks of a workflow that a transition marked due, under
  // the ids fixed at creation: a repeat (a crash, two brokers) finds them stored.
  void dispatch_due(const std::string& queue, const std::string& id);
  // Workflows of a queue whose callbacks have been due since before `before_ms`.
  std::vector<std::string> overdue_dispatches(const std::string& queue, std::int64_t before_ms);

  // A job prepared at creation as the scripts store it later (a waiting chain step,
  // a callback): JSON read by _lib_workflows.lua's workflow_push_member.
  static std::string payload(const BatchJob& job);
  static BatchJob from_payload(const std::string& text);

 private:
  RedisPool& redis_;
};

}  // namespace ojs::broker
