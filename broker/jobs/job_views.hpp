// The read models of a job and a queue: INFO (with the diagnosis while it waits),
// the job's and the queue's diagnosis, the job's tenant.
#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "broker/config.hpp"
#include "broker/jobs/gang_view.hpp"
#include "broker/scheduling/diagnosis_log.hpp"
#include "broker/scheduling/diagnosis_review.hpp"
#include "broker/store/cohort_store.hpp"
#include "broker/store/job_reads.hpp"
#include "broker/store/preemption_store.hpp"
#include "broker/store/queue_directory.hpp"
#include "broker/workers/worker_registry.hpp"

namespace ojs::broker {

class JobViews {
 public:
  JobViews(JobReads& reads, QueueDirectory& queues, PreemptionStore& marks, CohortStore& cohorts, DiagnosisLog& diagnosis,
           WorkerRegistry& workers, const BrokerConfig& config)
      : reads_(reads), queues_(queues), marks_(marks), cohorts_(cohorts), diagnosis_(diagnosis), workers_(workers), config_(config) {}

  nlohmann::json info(const std::string& id);               // -> envelope (+ diagnosis while waiting)
  nlohmann::json diagnosis(const std::string& id);          // why a job waits
  nlohmann::json queue_diagnosis(const std::string& queue); // per class: waiting jobs and why
  std::optional<std::string> tenant_of(const std::string& id);  // the job's tenant ("" = none); nullopt: no such job
  // The running jobs of a queue as the overview shows them, from one read of them.
  struct RunningView {
    int checkpoints_overdue = 0;                                  // late to checkpoint (checkpoint_lag.hpp)
    nlohmann::json elastic_gangs = nlohmann::json::array();       // [{job_id, type, min_size, max_size, size, generation, ...}]
  };
  RunningView running(const std::string& queue);

 private:
  DiagnosisReview review();
  // A running elastic gang's next worker (gang_view.hpp GrowthNext), from the class's
  // recent verdicts and what runs on those workers; none when no busy worker's job
  // declares its end.
  std::optional<GrowthNext> growth_next(const std::string& queue, const std::string& class_id,
                                               const std::vector<std::string>& members);  // the diagnosis end of the scheduling pipeline, over this broker's stores

  JobReads& reads_;
  QueueDirectory& queues_;
  PreemptionStore& marks_;
  CohortStore& cohorts_;
  DiagnosisLog& diagnosis_;
  WorkerRegistry& workers_;
  const BrokerConfig& config_;
};

}  // namespace ojs::broker
