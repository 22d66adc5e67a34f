// The OJS operations (PUSH, FETCH, ACK, FAIL, CANCEL, INFO, BEAT) as the broker
// implements them: validation and decisions here, atomic transitions in the store.
#pragma once
#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "broker/config.hpp"
#include "ojs/core/error.hpp"
#include "broker/scheduling/diagnosis_log.hpp"
#include "broker/pipeline/diagnosis_review.hpp"
#include "broker/scheduling/scheduler.hpp"
#include "broker/store/job_store.hpp"
#include "broker/workers/worker_registry.hpp"
#include "ojs/core/envelope.hpp"

namespace ojs::broker {

struct FetchRequest {
  std::vector<std::string> queues;
  int count = 1;
  std::string worker_id;
  std::optional<std::int64_t> visibility_timeout_ms;
  std::optional<nlohmann::json> capabilities;
  std::string capabilities_text;  // the same as compact JSON, dumped once: the registry's change check and the scheduler's memo key

  static FetchRequest parse(const nlohmann::json& body, int max_count);
};

// A validated PUSH body, ready for the store (see JobService::prepare).
struct PreparedJob {
  NewJob job;
  JobClassification cls;
  std::vector<std::pair<std::string, std::string>> fields;  // job hash fields
  std::optional<long long> config_version;  // of the queue config admission applied (none without admission)
};
// [gangs] Whether a class is an ext_ml_gang class (claimed by claim_gang, never by claim).
bool is_gang_class(const Scheduler& scheduler, const ClassSet& classes, const std::string& class_id);
// A started gang's job as one member receives it: rank, world size, rendezvous, its devices.
nlohmann::json gang_envelope(const JobRecord& job, int rank);
// [backpressure] push.lua's refusal ("depth bound strategy") as ojs-backpressure.md §7.1's
// 429 QUEUE_FULL {queue, depth, bound, strategy}.
OjsError queue_full_error(const std::string& queue, const std::string& detail);
// The prepared job as the store writes it, with its escalation / reservation-wait indexes.
BatchJob store_record(const PreparedJob& prepared);

// 404 naming the job: no job has this id (or the caller may not see it).
OjsError job_not_found(const std::string& id);

// The NACK error type of a job the worker stopped on a failed GPU (its XID policy):
// requeued without consuming an attempt, whatever the request's `requeue`.
inline constexpr const char* kGpuFaultType = "gpu_fault";

class JobService {
 public:
  JobService(JobStore& store, Scheduler& scheduler, WorkerRegistry& workers, DiagnosisLog& diagnosis,
             const BrokerConfig& config)
      : store_(store), scheduler_(scheduler), workers_(workers), diagnosis_(diagnosis), config_(config) {}

  nlohmann::json push(const nlohmann::json& body);          // -> envelope
  // The same, for `body` prepared already (prepare(body, true)): PUSH in one round trip.
  nlohmann::json push(const nlohmann::json& body, PreparedJob prepared);
  // Validation and decisions of PUSH without storing anything (batch PUSH
  // prepares every job before it stores one). Throws OjsError. `cached_config`: admission
  // may use this broker's copy of the queue config (PUSH, whose script checks its version).
  PreparedJob prepare(const nlohmann::json& body, bool cached_config = false);
  // A queue not seen yet may be created only within --max-queues (422 otherwise).
  // config_version: of the queue config read before (the known-queues cache notes it).
  void admit_queue(const std::string& queue, std::optional<long long> config_version = std::nullopt);
  // A queue deleted through this broker: its next PUSH is checked against --max-queues.
  void forget_queue(const std::string& queue);
  nlohmann::json info(const std::string& id);               // -> envelope (+ diagnosis while waiting)
  nlohmann::json diagnosis(const std::string& id);          // why a job waits
  nlohmann::json queue_diagnosis(const std::string& queue); // per class: waiting jobs and why
  nlohmann::json cancel(const std::string& id);             // -> envelope
  std::optional<std::string> tenant_of(const std::string& id);  // the job's tenant ("" = none); nullopt: no such job
  // contact: what the caller already read with the worker's contact (WorkerRegistry::contact:
  // its load and capacity-guard marks); without one, FETCH reads them itself.
  std::vector<nlohmann::json> fetch(const FetchRequest& request, const WorkerRegistry::Contact* contact = nullptr);
  // worker_id (optional, may be empty) makes the transition conditional on that
  // worker still holding the job.
  nlohmann::json ack(const std::string& id, const nlohmann::json* result, const std::string& worker_id = {});
  // BEAT: extends the visibility of the listed jobs this worker holds; the ids extended.
  std::vector<std::string> extend(const std::string& worker_id, std::int64_t visibility_ms, const std::vector<std::string>& ids);
  nlohmann::json fail(const std::string& id, const nlohmann::json& error, bool requeue, const std::string& worker_id = {});
  // Reaper: jobs whose visibility deadline passed and jobs held by workers that
  // stopped heartbeating return to `available` at once; a passed execution
  // timeout retries with backoff. Either way the attempt counts, and exhausted
  // jobs are discarded or dead-lettered.
  int reclaim_expired(const std::string& queue);
  int reclaim_from_lost_workers(const std::string& queue, const std::set<std::string>& lost_workers);

  JobStore& store() { return store_; }
  // A transition's job, or the OjsError its status means (404, 409 naming the state).
  static JobRecord checked(const Transition& t, const std::string& id, const char* operation);
  // Queue governance at PUSH (broker/governance): may fill the document (defaults),
  // throws OjsError to refuse (limits), returns the job's tenant ("" = none) and
  // fills the queue's policy for the job's score. `cached`: it may read the queue config
  // from this broker's cache; `config_version` gets the version of the config it applied.
  using PushAdmission = std::function<std::string(NewJob&, JobOrder&, bool cached, long long& config_version)>;
  void set_admission(PushAdmission admission) { admission_ = std::move(admission); }
  // Batch PUSH, once its jobs are valid and counted: may throw OjsError (the
  // caller's PUSH rate limit takes one token per job).
  using BatchAdmission = std::function<void(std::size_t jobs)>;
  void set_batch_admission(BatchAdmission admission) { batch_admission_ = std::move(admission); }
  void admit_batch(std::size_t jobs) const {
    if (batch_admission_) batch_admission_(jobs);
  }

 // The job's queue, or 404 naming the job.
  std::string queue_of_or_404(const std::string& id);

 private:
  DiagnosisReview review();  // the diagnosis end of the scheduling pipeline, over this broker's stores
  int reclaim(const std::string& queue, const std::vector<std::string>& ids, bool require_expired);

  // Symmetric anti-affinity on the claimed job itself: true when it was handed back.
  bool excluded_by_running_job(const JobRecord& record, const nlohmann::json& envelope, const ml::WorkerLoad& load);
  // Claims from one queue for a worker; appends envelopes to `jobs`.
  void fetch_from_queue(const std::string& queue, const FetchRequest& request, WorkerView& worker,
                        std::vector<nlohmann::json>& jobs);
  ClassSet classes_of(const std::string& queue, bool refresh);
  // [gangs] gang classes of the queue through claim_gang (broker/jobs/gang_fetch.cpp).
  void fetch_gang(const std::string& queue, const ClassSet& classes, const FetchRequest& request, WorkerView& worker,
                  std::vector<nlohmann::json>& jobs);

  JobStore& store_;
  Scheduler& scheduler_;
  WorkerRegistry& workers_;
  DiagnosisLog& diagnosis_;
  std::mutex classes_mutex_;
  std::map<std::string, ClassSet> classes_cache_;  // per queue; validated by the claim script's version check
  // Queues seen to exist in the queue directory: PUSH to a known queue skips the
  // --max-queues check's round trip for kKnownQueueMs. A queue deleted meanwhile
  // (only an empty one can be) is registered again by the PUSH itself: PUSH skips
  // the directory write only for a queue seen at the config version push.lua then
  // checks (a delete bumps it, delete_queue.lua).
  struct KnownQueue {
    std::int64_t seen_ms = 0;
    std::optional<long long> config_version;  // read before the directory was seen
  };
  static constexpr std::int64_t kKnownQueueMs = 5000;
  std::mutex known_queues_mutex_;
  std::unordered_map<std::string, KnownQueue> known_queues_;
  void note_known_queue(const std::string& queue, std::optional<long long> config_version);
  bool queue_registered(const std::string& queue, std::optional<long long> config_version);
  const BrokerConfig& config_;
  PushAdmission admission_;
  BatchAdmission batch_admission_;
};

}  // namespace ojs::broker
