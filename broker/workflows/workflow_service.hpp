// OJS level-3 workflows (spec/ojs-workflows.md): chain (steps one after another,
// each given the results before it as parent_results), group (jobs in parallel,
// done when all are) and batch (a group with on_complete / on_success / on_failure
// callbacks). Every job of a workflow is validated and admitted at creation by
// the same path as PUSH (PushService::prepare: envelope rules, governance, ext_ml_*);
// the job transitions advance the workflow inside their scripts.
#pragma once
#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>

#include "broker/jobs/push_service.hpp"
#include "broker/store/job_reads.hpp"
#include "broker/store/queue_directory.hpp"
#include "broker/store/workflow_store.hpp"

namespace ojs::broker {

inline constexpr std::size_t kMaxWorkflowJobs = 1000;  // steps or jobs per workflow (docs/operations.md)

class WorkflowService {
 public:
  WorkflowService(PushService& push, WorkflowStore& store, JobReads& reads, QueueDirectory& queues)
      : push_(push), store_(store), reads_(reads), queues_(queues) {}

  nlohmann::json create(const nlohmann::json& body);  // -> {"workflow": ...}; throws OjsError (400, 409, 422)
  nlohmann::json get(const std::string& id);          // -> {"workflow": ...}; 404
  // {items[workflow], pagination{total, page, per_page}}, newest first; with a
  // tenant scope only that tenant's (the first kListScan workflows are read to filter).
  nlohmann::json list(int page, int per_page, const std::string& tenant_scope);
  static constexpr int kListScan = 10000;
  nlohmann::json cancel(const std::string& id);       // -> {"workflow": ...}; 404, 409 when it has ended
  // Maintenance: enqueues batch callbacks left due by a broker that stopped
  // between a transition and its dispatch.
  void run_once();

 private:
  PushService& push_;  // every job is prepared as PUSH prepares it
  WorkflowStore& store_;
  JobReads& reads_;
  QueueDirectory& queues_;
};

}  // namespace ojs::broker
