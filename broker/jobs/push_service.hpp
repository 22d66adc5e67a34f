// PUSH: validation, governance, the requirement class and the job hash fields
// (prepare), then the store in one round trip (push); batch PUSH and the other
// producers (cron, workflows, unique PUSH) prepare through it too.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "broker/config.hpp"
#include "broker/scheduling/scheduler.hpp"
#include "broker/store/job_directory.hpp"
#include "broker/store/job_store.hpp"
#include "broker/store/queue_directory.hpp"
#include "ojs/core/envelope.hpp"
#include "ojs/core/error.hpp"
#include "ojs/core/object_text.hpp"

namespace ojs::broker {

// A validated PUSH body, ready for the store (see PushService::prepare).
struct PreparedJob {
  NewJob job;
  JobClassification cls;
  std::vector<std::pair<std::string, std::string>> fields;  // job hash fields
  std::optional<long long> config_version;  // of the queue config admission applied (none without admission)
  std::vector<std::string> warnings;         // answered with the job (args against a registered schema, warn mode)
};
// push.lua's refusal ("depth bound strategy") as ojs-backpressure.md §7.1's
// 429 QUEUE_FULL {queue, depth, bound, strategy}.
OjsError queue_full_error(const std::string& queue, const std::string& detail);
// The prepared job as the store writes it, with its escalation / reservation-wait indexes.
BatchJob store_record(const PreparedJob& prepared);
// The job hash fields claim_gang.lua reads of an ext_ml_gang job (none for another job):
// PUSH writes them, and the cluster simulator's queue pushes its gangs with them.
std::vector<std::pair<std::string, std::string>> gang_fields(const ml::Requirements& requirements);


class PushService {
 public:
  PushService(JobStore& transitions, JobDirectory& directory, QueueDirectory& queues, Scheduler& scheduler,
              const BrokerConfig& config)
      : transitions_(transitions), directory_(directory), queues_(queues), scheduler_(scheduler), config_(config) {}

  // The same, for `body` prepared already (prepare(body, true)): PUSH in one round trip.
  ObjectText push(const nlohmann::json& body, PreparedJob prepared);  // -> the envelope, as text
  // Validation and decisions of PUSH without storing anything (batch PUSH
  // prepares every job before it stores one). Throws OjsError. `cached_config`: admission
  // may use this broker's copy of the queue config (PUSH, whose script checks its version).
  PreparedJob prepare(const nlohmann::json& body, bool cached_config = false);
  // A queue not seen yet may be created only within --max-queues (422 otherwise).
  // config_version: of the queue config read before (the known-queues cache notes it).
  void admit_queue(const std::string& queue, std::optional<long long> config_version = std::nullopt);
  // A queue deleted through this broker: its next PUSH is checked against --max-queues.
  void forget_queue(const std::string& queue);

  // Queue governance at PUSH (broker/governance): may fill the document (defaults),
  // throws OjsError to refuse (limits), returns the job's tenant ("" = none) and
  // fills the queue's policy for the job's score. `cached`: it may read the queue config
  // from this broker's cache; `config_version` gets the version of the config it applied,
  // `requirements` the job's requirements as it parsed them (the job is classified by them).
  using PushAdmission =
      std::function<std::string(NewJob&, JobOrder&, bool cached, long long& config_version, ml::Requirements& requirements)>;
  void set_admission(PushAdmission admission) { admission_ = std::move(admission); }
  // Batch PUSH, once its jobs are valid and counted: may throw OjsError (the
  // caller's PUSH rate limit takes one token per job).
  using BatchAdmission = std::function<void(std::size_t jobs)>;
  void set_batch_admission(BatchAdmission admission) { batch_admission_ = std::move(admission); }
  void admit_batch(std::size_t jobs) const {
    if (batch_admission_) batch_admission_(jobs);
  }
  // The job's args against its type's registered schema (broker/schemas), once its
  // tenant is known: returns warnings to answer, throws OjsError to refuse.
  using ArgsCheck = std::function<std::vector<std::string>(const NewJob&, const std::string& tenant)>;
  void set_args_check(ArgsCheck check) { args_check_ = std::move(check); }

 private:
  JobStore& transitions_;
  JobDirectory& directory_;
  QueueDirectory& queues_;
  Scheduler& scheduler_;
  const BrokerConfig& config_;
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
  PushAdmission admission_;
  BatchAdmission batch_admission_;
  ArgsCheck args_check_;
};

}  // namespace ojs::broker
