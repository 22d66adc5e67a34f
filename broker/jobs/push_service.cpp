#include "broker/jobs/push_service.hpp"

#include <algorithm>
#include <cstdio>

#include "broker/preemption/preemption.hpp"
#include "broker/store/store_error.hpp"
#include "ojs/core/time.hpp"
#include "ojs/ml/capabilities.hpp"

namespace ojs::broker {

using nlohmann::json;

OjsError queue_full_error(const std::string& queue, const std::string& detail) {
  long long depth = 0, bound = 0;
  char strategy[16] = "reject";
  std::sscanf(detail.c_str(), "%lld %lld %15s", &depth, &bound, strategy);
  return OjsError(ErrorCode::queue_full, "Queue '" + queue + "' has reached its depth bound (" + std::to_string(bound) + ")",
                  {{"queue", queue}, {"depth", depth}, {"bound", bound}, {"strategy", std::string(strategy)}, {"retry_after_s", 1}});
}

void PushService::note_known_queue(const std::string& queue, std::optional<long long> config_version) {
  const std::size_t bound = std::max<std::size_t>(4096, static_cast<std::size_t>(std::max(config_.max_queues, 0)) * 2);
  std::lock_guard lock(known_queues_mutex_);
  if (known_queues_.size() >= bound && !known_queues_.count(queue)) known_queues_.clear();  // bounded
  known_queues_[queue] = {now_ms(), config_version};
}

bool PushService::queue_registered(const std::string& queue, std::optional<long long> config_version) {
  if (!config_version) return false;
  std::lock_guard lock(known_queues_mutex_);
  auto it = known_queues_.find(queue);
  return it != known_queues_.end() && it->second.config_version == config_version && now_ms() - it->second.seen_ms < kKnownQueueMs;
}

void PushService::admit_queue(const std::string& queue, std::optional<long long> config_version) {
  if (config_.max_queues <= 0) return;
  {
    std::lock_guard lock(known_queues_mutex_);
    auto it = known_queues_.find(queue);
    if (it != known_queues_.end() && now_ms() - it->second.seen_ms < kKnownQueueMs) return;
  }
  if (queues_.queue_exists(queue)) {
    note_known_queue(queue, config_version);
    return;
  }
  if (queues_.queue_count() >= static_cast<std::size_t>(config_.max_queues))
    throw OjsError(ErrorCode::validation_error, "broker bound max_queues: " + std::to_string(config_.max_queues) + " queues exist; queue " +
                   queue + " would be a new one (an admin may delete empty queues)",
                   {{"field", "queue"}, {"limit", "max_queues"}, {"max", config_.max_queues}});
}

void PushService::forget_queue(const std::string& queue) {
  std::lock_guard lock(known_queues_mutex_);
  known_queues_.erase(queue);
}

// Everything PUSH decides before the store: envelope rules, governance, the
// requirement class, and the job hash fields. Shared by PUSH and batch PUSH.
PreparedJob PushService::prepare(const json& body, bool cached_config) {
  PreparedJob prepared;
  prepared.job = parse_enqueue_request(body, now_ms());
  NewJob& job = prepared.job;
  JobOrder order;
  std::string tenant;
  if (admission_) {  // defaults, limits, tenant, policy
    long long version = 0;
    ml::Requirements admitted;  // parsed once, after the defaults (a tenth of a PUSH's work)
    tenant = admission_(job, order, cached_config, version, admitted);
    prepared.config_version = version;
    prepared.cls = scheduler_.classify(std::move(admitted), job.priority);
  } else {
    prepared.cls = scheduler_.classify(job.document, job.priority);  // validates ext_ml_*
  }
  if (args_check_) prepared.warnings = args_check_(job, tenant);
  JobClassification& cls = prepared.cls;
  check_checkpoint_prefix(cls.requirements, config_.checkpoint_prefixes);
  bind_reservation(cls);  // a job naming a reservation runs only inside it: its own class
  admit_queue(job.queue, prepared.config_version);

  auto& fields = prepared.fields;
  // The document once: its priority, attempts and GPUs are read from it (JobRecord),
  // the fields below are those a script tests or an index names.
  fields = {
      {"doc", JobRecord::stored_document(job.document)},
      {"queue", job.queue},
      {"type", job.type},
  };
  if (!tenant.empty()) fields.emplace_back("tenant", tenant);
  // What the job's CPU-seconds and memory-GB-seconds are counted from
  // (_lib_accounting.lua usage_amounts): no cpu_cores field counts one core.
  const auto& hard = cls.requirements.hard;
  if (hard.cpu_cores) fields.emplace_back("cpus", std::to_string(*hard.cpu_cores));
  if (hard.memory_gb) fields.emplace_back("mem_mb", std::to_string(ml::gpu_memory_mb(*hard.memory_gb)));
  // Under a policy other than priority the ready-set score has its own
  // base (priority_score.hpp); rank_base stays the priority band preemption reads.
  if (order.policy != QueuePolicy::priority)
    fields.emplace_back("order_base", rank_text(order_base(order.policy, priority_class_rank(cls.requirements), job.priority,
                                                           cls.requirements.scheduling.estimated_duration_seconds, order.fair_slot)));
  if (const auto& est = cls.requirements.scheduling.estimated_duration_seconds)  // backfill: read by claim.lua
    fields.emplace_back("estimated_duration_s", std::to_string(*est));
  if (job.visibility_timeout_ms) fields.emplace_back("visibility_timeout_ms", std::to_string(*job.visibility_timeout_ms));
  if (job.expires_at_ms) fields.emplace_back("expires_at", std::to_string(*job.expires_at_ms));
  // Execution deadline: ext_ml_timeout_seconds overrides the OJS timeout_ms.
  std::optional<std::int64_t> timeout_ms = job.timeout_ms;
  if (cls.requirements.scheduling.timeout_seconds) timeout_ms = *cls.requirements.scheduling.timeout_seconds * 1000LL;
  if (timeout_ms && *timeout_ms > 0) fields.emplace_back("timeout_ms", std::to_string(*timeout_ms));
  for (auto& field : gang_fields(cls.requirements)) fields.push_back(std::move(field));
  return prepared;
}

std::vector<std::pair<std::string, std::string>> gang_fields(const ml::Requirements& requirements) {
  const auto& gang = requirements.hard.gang;
  if (gang.size == 0) return {};
  std::vector<std::pair<std::string, std::string>> fields{{"gang_size", std::to_string(gang.size)}};  // the members it starts with (min_size)
  if (gang.elastic()) fields.emplace_back("gang_max_size", std::to_string(gang.max_size));  // it may grow to
  fields.emplace_back("gang_label", gang.same_label);
  fields.emplace_back("gang_timeout_ms", std::to_string(requirements.scheduling.gang_timeout_s * 1000LL));
  return fields;
}

BatchJob store_record(const PreparedJob& prepared) {
  const auto& job = prepared.job;
  BatchJob record{job.queue, job.id, prepared.cls.class_id, prepared.cls.class_json, prepared.cls.rank_base,
                  job.scheduled_at_ms, prepared.fields, {}, {}};
  // Escalation and reservation-timeout indexes are written by the same script as the job.
  const auto& s = prepared.cls.requirements.scheduling;
  if (s.priority_escalation && s.escalation_after_s) record.escalate_after_ms = *s.escalation_after_s * 1000LL;
  if (!s.reservation_id.empty() && s.reservation_timeout_s) record.reservation_timeout_ms = *s.reservation_timeout_s * 1000LL;
  return record;
}

// PUSH in one round trip (docs/architecture.md, "PUSH"): admission applies this
// broker's cached queue config and push.lua checks its version; a broker-minted id
// (a UUIDv7: it cannot collide) has its directory entries written ahead of the
// script in the same pipeline. A client's id is checked first (JobDirectory::reserve_id), for
// duplicates across queues. A stale config (an admin changed it, on any broker)
// stores nothing: PUSH prepares the job again from a fresh read.
ObjectText PushService::push(const json& body, PreparedJob prepared) {
  const bool minted = !body.contains("id");
  bool reserved = false;
  constexpr int kTries = 3;
  for (int tries = 1;; ++tries) {
    const NewJob& job = prepared.job;
    if (!minted && !reserved) {
      if (!directory_.reserve_id(job.id, job.queue))
        throw OjsError(ErrorCode::duplicate, "a job with id " + job.id + " already exists", {{"job_id", job.id}});
      reserved = true;
    }
    const bool register_queue = minted && !queue_registered(job.queue, prepared.config_version);
    Transition t;
    try {
      t = transitions_.push(store_record(prepared), {prepared.config_version, minted, register_queue});
    } catch (const StoreTimedOut& e) {
      // Sent to a stalled Redis: it may store the job when it resumes. A client's
      // own id makes a plain retry safe (409 once stored); a minted one does not,
      // so the client gets the id to retry with instead of `retryable: true`.
      if (!minted) throw;
      throw OjsError(ErrorCode::backend_timeout,
                     "Redis did not answer in time: job " + job.id + " may or may not have been stored (" + e.what() +
                         "); resend the PUSH with this id, never without it",
                     {{"job_id", job.id}, {"check", "/ojs/v1/jobs/" + job.id}});
    }
    if (t.status == TransitionStatus::ok) {
      if (register_queue) note_known_queue(job.queue, prepared.config_version);
      return t.job.envelope_text();
    }
    if (t.status == TransitionStatus::duplicate)
      throw OjsError(ErrorCode::duplicate, "a job with id " + job.id + " already exists", {{"job_id", job.id}});
    if (t.status == TransitionStatus::queue_full) {  // nothing stored: the id is free again
      directory_.forget(job.id);
      throw queue_full_error(job.queue, t.detail);
    }
    if (tries == kTries)
      throw OjsError(ErrorCode::conflict, "queue " + job.queue + " configuration kept changing while pushing; retry",
                     {{"queue", job.queue}, {"config_version", t.detail}});
    forget_queue(job.queue);  // seen at the old version only: its directory entry is checked or written again
    json again = body;        // the same id (a minted one has its directory entry already)
    again["id"] = job.id;
    prepared = prepare(again, false);
  }
}

}  // namespace ojs::broker
