#include "broker/jobs/job_service.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <set>

#include "ojs/core/envelope.hpp"
#include "ojs/ml/affinity.hpp"
#include "ojs/ml/capabilities.hpp"
#include "ojs/ml/worker_load.hpp"
#include "ojs/ml/requirement_class.hpp"
#include "ojs/core/error.hpp"
#include "ojs/core/time.hpp"
#include "ojs/core/uuid.hpp"
#include "broker/preemption/backfill.hpp"
#include "broker/preemption/preemption.hpp"
#include "broker/pipeline/claim_refusals.hpp"
#include "broker/pipeline/fetch_filters.hpp"
#include "broker/store/store_error.hpp"
#include "broker/store/workflow_store.hpp"

namespace ojs::broker {

using nlohmann::json;

namespace {

double unit_random() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

OjsError not_found(const std::string& id) { return job_not_found(id); }

}  // namespace

OjsError job_not_found(const std::string& id) {
  return OjsError(ErrorCode::not_found, "job " + id + " not found", {{"job_id", id}});
}

OjsError queue_full_error(const std::string& queue, const std::string& detail) {
  long long depth = 0, bound = 0;
  char strategy[16] = "reject";
  std::sscanf(detail.c_str(), "%lld %lld %15s", &depth, &bound, strategy);
  return OjsError(ErrorCode::queue_full, "Queue '" + queue + "' has reached its depth bound (" + std::to_string(bound) + ")",
                  {{"queue", queue}, {"depth", depth}, {"bound", bound}, {"strategy", std::string(strategy)}, {"retry_after_s", 1}});
}

namespace {

void require_job_id(const std::string& id, const char* field) {
  if (!is_uuidv7(id)) throw invalid_field(field, "must be a lowercase UUIDv7 job id");
}

// The error object kept on the job: what the worker sent, normalised so that
// code, type, message and retryable are always present.
json normalise_error(const json& error, int attempt) {
  json e = error.is_object() ? error : json::object();
  if (!e.contains("message") || !e["message"].is_string())
    e["message"] = error.is_string() ? error.get<std::string>() : std::string("job failed");
  if (!e.contains("code") || !e["code"].is_string()) e["code"] = e.contains("type") && e["type"].is_string() ? e["type"] : json("handler_error");
  if (!e.contains("type") || !e["type"].is_string()) e["type"] = e["code"];
  if (!e.contains("retryable") || !e["retryable"].is_boolean()) e["retryable"] = true;
  e["attempt"] = attempt;
  e["occurred_at"] = format_rfc3339(now_ms());
  return e;
}

// ojs-retry.md §6.2: the worker's error `type` (also its `code`, which older workers
// send alone) against `non_retryable_errors`, exactly or by a "prefix.*" entry.
bool matches_non_retryable(const RetryPolicy& policy, const json& error) {
  for (const char* key : {"type", "code"}) {
    const std::string value = error.value(key, std::string());
    for (const auto& entry : policy.non_retryable_errors) {
      if (entry == value) return true;
      const bool prefix = entry.size() >= 2 && entry.compare(entry.size() - 2, 2, ".*") == 0;
      if (prefix && value.compare(0, entry.size() - 1, entry, 0, entry.size() - 1) == 0) return true;
    }
  }
  return false;
}

// A retried NACK (its first reply lost: the broker answered 503) by the worker whose
// failure the job last recorded, with the same error, answers as the first did; it is
// read only, so nothing is written twice. Requeues record no error: they stay conflicts.
bool replays_its_last_failure(const JobRecord& job, const json& error, bool requeue, const std::string& worker_id) {
  const auto& state = job.state();
  if (requeue || worker_id.empty() || job.get("worker_id") != worker_id) return false;
  if (state != "retryable" && state != "available" && state != "discarded") return false;
  json last = json::parse(job.get("error"), nullptr, false);
  if (!last.is_object()) return false;
  json again = normalise_error(error, job.attempt());
  last.erase("occurred_at");
  again.erase("occurred_at");
  return last == again;
}

// [workflows] The transition that ended a batch's last job marked its callbacks
// due; they are enqueued here, right after (the maintenance loop retries what a
// failure here leaves due).
const JobRecord& dispatch_workflow_callbacks(JobStore& store, const JobRecord& job) {
  if (!job.has("workflow_member")) return job;
  try {
    WorkflowStore(store).dispatch_due(job.queue(), job.get("workflow_id"));
  } catch (const std::exception& e) {
    spdlog::warn("workflow {}: enqueueing its due callbacks failed ({}); the maintenance loop retries", job.get("workflow_id"), e.what());
  }
  return job;
}

}  // namespace

FetchRequest FetchRequest::parse(const json& body, int max_count) {
  if (!body.is_object()) throw invalid_field("$", "request body must be a JSON object");
  FetchRequest r;
  if (!body.contains("queues")) throw invalid_field("queues", "is required");
  if (!body["queues"].is_array() || body["queues"].empty()) throw invalid_field("queues", "must be a non-empty array of queue names");
  for (const auto& q : body["queues"]) {
    if (!q.is_string() || !is_valid_queue_name(q.get<std::string>()))
      throw invalid_field("queues", "each queue name must match ^[a-z0-9][a-z0-9.-]*$");
    r.queues.push_back(q.get<std::string>());
  }
  if (body.contains("count")) {
    if (!body["count"].is_number_integer() || body["count"].get<long long>() < 1)
      throw invalid_field("count", "must be an integer >= 1");
    r.count = static_cast<int>(std::min<long long>(body["count"].get<long long>(), max_count));
  }
  if (body.contains("worker_id")) {
    r.worker_id = require_worker_id(body["worker_id"], "worker_id");
  } else {
    r.worker_id = "anonymous";
  }
  if (body.contains("visibility_timeout_ms")) {
    const auto& v = body["visibility_timeout_ms"];
    if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > kMaxDurationMs)
      throw invalid_field("visibility_timeout_ms", "must be an integer between 0 and " + std::to_string(kMaxDurationMs));
    r.visibility_timeout_ms = body["visibility_timeout_ms"].get<long long>();
  }
  if (body.contains("capabilities") && !body["capabilities"].is_null()) {
    if (!body["capabilities"].is_object()) throw invalid_field("capabilities", "must be an object");
    r.capabilities = body["capabilities"];
    r.capabilities_text = r.capabilities->dump();
    ml::require_bounded_capabilities(*r.capabilities, r.capabilities_text.size());
  }
  return r;
}

void JobService::note_known_queue(const std::string& queue, std::optional<long long> config_version) {
  const std::size_t bound = std::max<std::size_t>(4096, static_cast<std::size_t>(std::max(config_.max_queues, 0)) * 2);
  std::lock_guard lock(known_queues_mutex_);
  if (known_queues_.size() >= bound && !known_queues_.count(queue)) known_queues_.clear();  // bounded
  known_queues_[queue] = {now_ms(), config_version};
}

bool JobService::queue_registered(const std::string& queue, std::optional<long long> config_version) {
  if (!config_version) return false;
  std::lock_guard lock(known_queues_mutex_);
  auto it = known_queues_.find(queue);
  return it != known_queues_.end() && it->second.config_version == config_version && now_ms() - it->second.seen_ms < kKnownQueueMs;
}

void JobService::admit_queue(const std::string& queue, std::optional<long long> config_version) {
  if (config_.max_queues <= 0) return;
  {
    std::lock_guard lock(known_queues_mutex_);
    auto it = known_queues_.find(queue);
    if (it != known_queues_.end() && now_ms() - it->second.seen_ms < kKnownQueueMs) return;
  }
  if (store_.queue_exists(queue)) {
    note_known_queue(queue, config_version);
    return;
  }
  if (store_.queue_count() >= static_cast<std::size_t>(config_.max_queues))
    throw OjsError(ErrorCode::validation_error, "broker bound max_queues: " + std::to_string(config_.max_queues) + " queues exist; queue " +
                   queue + " would be a new one (an admin may delete empty queues)",
                   {{"field", "queue"}, {"limit", "max_queues"}, {"max", config_.max_queues}});
}

void JobService::forget_queue(const std::string& queue) {
  std::lock_guard lock(known_queues_mutex_);
  known_queues_.erase(queue);
}

// Everything PUSH decides before the store: envelope rules, governance, the
// requirement class, and the job hash fields. Shared by PUSH and batch PUSH.
PreparedJob JobService::prepare(const json& body, bool cached_config) {
  PreparedJob prepared{parse_enqueue_request(body, now_ms()), {}, {}, {}};
  NewJob& job = prepared.job;
  JobOrder order;
  std::string tenant;
  if (admission_) {  // defaults, limits, tenant, policy
    long long version = 0;
    tenant = admission_(job, order, cached_config, version);
    prepared.config_version = version;
  }
  prepared.cls = scheduler_.classify(job.document, job.priority);  // validates ext_ml_*
  JobClassification& cls = prepared.cls;
  check_checkpoint_prefix(cls.requirements, config_.checkpoint_prefixes);
  bind_reservation(cls);  // a job naming a reservation runs only inside it: its own class
  admit_queue(job.queue, prepared.config_version);

  auto& fields = prepared.fields;
  fields = {
      {"doc", job.document.dump()},
      {"queue", job.queue},
      {"type", job.type},
      {"priority", std::to_string(job.priority)},
      {"max_attempts", std::to_string(job.retry.max_attempts)},
      {"gpus", std::to_string(cls.requirements.gpu_count())},
  };
  if (!tenant.empty()) fields.emplace_back("tenant", tenant);
  // [usage] What the job's CPU-seconds and memory-GB-seconds are counted from
  // (_lib_accounting.lua usage_amounts): no cpu_cores field counts one core.
  const auto& hard = cls.requirements.hard;
  if (hard.cpu_cores) fields.emplace_back("cpus", std::to_string(*hard.cpu_cores));
  if (hard.memory_gb) fields.emplace_back("mem_mb", std::to_string(ml::gpu_memory_mb(*hard.memory_gb)));
  // [fairshare] Under a policy other than priority the ready-set score has its own
  // base (priority_score.hpp); rank_base stays the priority band preemption reads.
  if (order.policy != QueuePolicy::priority)
    fields.emplace_back("order_base", rank_text(order_base(order.policy, priority_class_rank(cls.requirements), job.priority,
                                                           cls.requirements.scheduling.estimated_duration_seconds, order.fair_slot)));
  if (const auto& est = cls.requirements.scheduling.estimated_duration_seconds)  // [backfill] read by claim.lua
    fields.emplace_back("estimated_duration_s", std::to_string(*est));
  if (job.visibility_timeout_ms) fields.emplace_back("visibility_timeout_ms", std::to_string(*job.visibility_timeout_ms));
  if (job.expires_at_ms) fields.emplace_back("expires_at", std::to_string(*job.expires_at_ms));
  // Execution deadline: ext_ml_timeout_seconds overrides the OJS timeout_ms.
  std::optional<std::int64_t> timeout_ms = job.timeout_ms;
  if (cls.requirements.scheduling.timeout_seconds) timeout_ms = *cls.requirements.scheduling.timeout_seconds * 1000LL;
  if (timeout_ms && *timeout_ms > 0) fields.emplace_back("timeout_ms", std::to_string(*timeout_ms));
  if (const auto& gang = cls.requirements.hard.gang; gang.size > 0) {  // [gangs] read by claim_gang.lua
    fields.emplace_back("gang_size", std::to_string(gang.size));
    fields.emplace_back("gang_label", gang.same_label);
    fields.emplace_back("gang_timeout_ms", std::to_string(cls.requirements.scheduling.gang_timeout_s * 1000LL));
  }
  return prepared;
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
// script in the same pipeline. A client's id is checked first (JobStore::reserve_id), for
// duplicates across queues. A stale config (an admin changed it, on any broker)
// stores nothing: PUSH prepares the job again from a fresh read.
json JobService::push(const json& body) { return push(body, prepare(body, true)); }

json JobService::push(const json& body, PreparedJob prepared) {
  const bool minted = !body.contains("id");
  bool reserved = false;
  constexpr int kTries = 3;
  for (int tries = 1;; ++tries) {
    const NewJob& job = prepared.job;
    if (!minted && !reserved) {
      if (!store_.reserve_id(job.id, job.queue))
        throw OjsError(ErrorCode::duplicate, "a job with id " + job.id + " already exists", {{"job_id", job.id}});
      reserved = true;
    }
    const bool register_queue = minted && !queue_registered(job.queue, prepared.config_version);
    Transition t;
    try {
      t = store_.push(store_record(prepared), {prepared.config_version, minted, register_queue});
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
      return t.job.envelope();
    }
    if (t.status == TransitionStatus::duplicate)
      throw OjsError(ErrorCode::duplicate, "a job with id " + job.id + " already exists", {{"job_id", job.id}});
    if (t.status == TransitionStatus::queue_full) {  // [backpressure] nothing stored: the id is free again
      store_.forget(job.id);
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

std::string JobService::queue_of_or_404(const std::string& id) {
  auto queue = store_.queue_of(id);
  if (!queue) throw not_found(id);
  return *queue;
}

std::optional<std::string> JobService::tenant_of(const std::string& id) {
  auto record = store_.get(id);
  if (!record) return std::nullopt;
  return record->get("tenant");
}

DiagnosisReview JobService::review() {
  return DiagnosisReview(diagnosis_, workers_, store_.preemption(), config_.worker_dead_after_ms);
}

json JobService::info(const std::string& id) {
  auto record = store_.get(id);
  if (!record) throw not_found(id);
  json envelope = record->envelope();
  const auto& state = record->state();
  const bool waiting = state == "available" || state == "retryable" || state == "scheduled";
  if (waiting && record->get("class") != ml::kDefaultClassId) envelope["diagnosis"] = review().summary(record->queue(), record->get("class"), &*record);
  return envelope;
}

json JobService::diagnosis(const std::string& id) {
  auto record = store_.get(id);
  if (!record) throw not_found(id);
  json out = review().summary(record->queue(), record->get("class"), &*record);
  out["job_id"] = id;
  out["state"] = record->state();
  out["queue"] = record->queue();
  if (record->state() == "pending" && record->has("held_by")) {  // [issue #33] an operator holds it: nothing else matters
    out["held_by"] = record->get("held_by");
    out["message"] = "held by " + record->get("held_by") + ": no worker takes it until it is released (POST /ojs/v1/jobs/" + id + "/release)";
  }
  out["requirements"] = json::parse(store_.load_classes(record->queue()).classes[record->get("class")], nullptr, false);
  if (record->state() == "available") {  // [backfill] the worker held for it, and from when
    auto marks = store_.preemption();
    if (auto hold = backfill_hold_of(marks, id))
      out["backfill_reservation"] = {{"worker_id", hold->worker_id}, {"start_at", format_rfc3339(hold->backfill_start_ms)},
                                     {"until", format_rfc3339(hold->until_ms)}, {"gpus", hold->gpus}};
  }
  return out;
}

json JobService::queue_diagnosis(const std::string& queue) {
  const auto classes = store_.load_classes(queue);
  const auto waiting = store_.ready_counts(queue, classes);
  json list = json::array();
  auto reviewed = review();
  for (const auto& [id, canonical] : classes.classes) {
    json entry = reviewed.summary(queue, id);
    entry["waiting"] = waiting.count(id) ? waiting.at(id) : 0;
    entry["requirements"] = json::parse(canonical, nullptr, false);
    list.push_back(std::move(entry));
  }
  return {{"queue", queue}, {"classes", list}};
}

JobRecord JobService::checked(const Transition& t, const std::string& id, const char* operation) {
  switch (t.status) {
    case TransitionStatus::ok: return t.job;
    case TransitionStatus::not_found: throw not_found(id);
    case TransitionStatus::conflict:
      throw OjsError(ErrorCode::conflict, std::string("cannot ") + operation + " job " + id + " in state '" + t.detail + "'",
                     {{"job_id", id}, {"state", t.detail}});
    default:
      throw OjsError(ErrorCode::conflict, std::string("cannot ") + operation + " job " + id + ": it changed concurrently",
                     {{"job_id", id}});
  }
}

json JobService::cancel(const std::string& id) {
  const auto queue = queue_of_or_404(id);
  return dispatch_workflow_callbacks(store_, checked(store_.cancel(queue, id), id, "cancel")).envelope();
}

ClassSet JobService::classes_of(const std::string& queue, bool refresh) {
  if (!refresh) {
    std::lock_guard lock(classes_mutex_);
    auto it = classes_cache_.find(queue);
    if (it != classes_cache_.end()) return it->second;
  }
  ClassSet fresh = store_.load_classes(queue);
  // Bounded like the scheduler's memo: FETCH may name queues that do not exist
  // (those are not kept), and past the bound the cache starts over.
  constexpr std::size_t kMaxCachedQueues = 4096;
  if (fresh.classes.empty()) return fresh;
  std::lock_guard lock(classes_mutex_);
  if (classes_cache_.size() >= kMaxCachedQueues && !classes_cache_.count(queue)) classes_cache_.clear();
  return classes_cache_[queue] = std::move(fresh);
}

std::vector<json> JobService::fetch(const FetchRequest& request, const WorkerRegistry::Contact* contact) {
  std::vector<json> jobs;
  WorkerView worker;
  worker.worker_id = request.worker_id;
  if (request.capabilities) {
    auto [caps, fingerprint] = scheduler_.capabilities(*request.capabilities, &request.capabilities_text);
    worker.capabilities = std::move(caps);
    worker.fingerprint = std::move(fingerprint);
    worker.load = contact ? contact->held.load : workers_.load(request.worker_id);
    if (contact) worker.load.drain(contact->drained_devices);  // per-GPU drain: out of placement
  }
  worker.guards = contact ? contact->guards : store_.preemption().guards_for(request.worker_id);
  for (const auto& queue : request.queues) {
    if (static_cast<int>(jobs.size()) >= request.count) break;
    fetch_from_queue(queue, request, worker, jobs);
  }
  diagnosis_.flush();
  return jobs;
}

void JobService::fetch_from_queue(const std::string& queue, const FetchRequest& request, WorkerView& worker,
                                  std::vector<json>& jobs) {
  ClassSet classes = classes_of(queue, false);
  fetch_gang(queue, classes, request, worker, jobs);  // [gangs] gang classes go to claim_gang only
  // The cached class set may predate a gang class: once it is refreshed below, a
  // gang class it did not have is offered to claim_gang in this same FETCH.
  const auto refreshed = [&](ClassSet fresh) {
    const bool new_gang = std::any_of(fresh.classes.begin(), fresh.classes.end(), [&](const auto& c) {
      return !classes.classes.count(c.first) && is_gang_class(scheduler_, fresh, c.first);
    });
    classes = std::move(fresh);
    if (new_gang && static_cast<int>(jobs.size()) < request.count) fetch_gang(queue, classes, request, worker, jobs);
  };
  // A worker with capabilities claims one job at a time so that the GPUs and
  // devices of each claim are taken into account for the next.
  const bool one_by_one = worker.capabilities.has_value();
  std::set<std::string> given_back;  // classes of a job handed back by symmetric anti-affinity: not claimed again this FETCH
  for (int round = 0; round < 2 * request.count + 3 && static_cast<int>(jobs.size()) < request.count; ++round) {
    const int want = one_by_one ? 1 : request.count - static_cast<int>(jobs.size());
    std::vector<EligibleClass> eligible;
    std::map<std::string, const ClassVerdict*> verdict_of;
    auto verdicts = run_fetch_filters(store_, scheduler_, queue, classes, worker, assignment_options(config_));
    for (const auto& v : verdicts) {
      verdict_of[v.class_id] = &v;
      const bool gang = is_gang_class(scheduler_, classes, v.class_id);
      if (gang && worker.capabilities) continue;  // fetch_gang judged and noted it, with claim_gang's answer
      if (v.judgement.eligible() && !gang && !given_back.count(v.class_id)) eligible.push_back(v.claim);
      diagnosis_.note(queue, v.class_id, worker.worker_id, v.judgement);
    }
    if (eligible.empty()) {
      // The cached class set may predate a class this worker could take (claim's
      // version check never runs when nothing is eligible): look once more.
      if (round > 0 || store_.classes_version(queue) == classes.version) return;
      refreshed(classes_of(queue, true));
      continue;
    }
    auto outcome = store_.claim(queue, worker.worker_id, request.visibility_timeout_ms,
                                config_.default_visibility_timeout_ms, want, classes.version, eligible,
                                worker.capabilities.has_value());
    if (outcome.status == TransitionStatus::stale) {  // a class appeared since we looked
      refreshed(classes_of(queue, true));
      continue;
    }
    for (const auto& block : outcome.budget_blocked)
      diagnosis_.note_refusal(queue, block.class_id, worker.worker_id,
                              block.kind == "backfill" ? backfill_refusal(block.in_use, block.limit).refusals.front() : budget_refusal(block));
    if (outcome.jobs.empty() && !outcome.rate_limited.empty())  // why-waiting names the queue's rate limit
      for (const auto& c : eligible) diagnosis_.note_refusal(queue, c.id, worker.worker_id, rate_limit_refusal(outcome.rate_limited));
    if (outcome.jobs.empty()) return;
    for (const auto& record : outcome.jobs) {
      json envelope = record.envelope();
      if (worker.capabilities && excluded_by_running_job(record, envelope, worker.load)) {
        given_back.insert(record.get("class"));
        continue;
      }
      if (worker.capabilities) {
        const auto* v = verdict_of[record.get("class")];
        ml::ActiveJob active = ml::active_job_from(envelope, record.held_gpus());
        const std::vector<int> devices = v ? v->judgement.devices : std::vector<int>{};
        worker.load.active.push_back(active);  // claim.lua listed it in the worker's held set
        worker.load.hold(devices, active.gpu_memory_gb);
      }
      jobs.push_back(std::move(envelope));
    }
    if (!one_by_one) return;
  }
}

// Symmetric anti-affinity on what only the job knows (its type, id, meta.labels,
// tenant: the predicate judged its class on its ML attributes): a job a running job's
// anti-affinity excludes goes back at once, requeued without consuming the attempt.
bool JobService::excluded_by_running_job(const JobRecord& record, const json& envelope, const ml::WorkerLoad& load) {
  const auto ex = ml::excluded_by_running(load, ml::job_labels(envelope), false);
  if (!ex) return false;
  const json error = {{"code", "anti_affinity"},
                      {"message", "worker runs job " + ex->job_id + " whose anti-affinity " + ml::describe(ex->rule) + " excludes this job"},
                      {"retryable", true}};
  try {
    fail(record.id(), error, true, record.get("worker_id"));
    return true;
  } catch (const std::exception& e) {  // left with the worker rather than stranded until its visibility timeout
    spdlog::warn("job {}: handing it back for anti-affinity failed ({}); the worker keeps it", record.id(), e.what());
    return false;
  }
}

std::vector<std::string> JobService::extend(const std::string& worker_id, std::int64_t visibility_ms,
                                            const std::vector<std::string>& ids) {
  std::vector<std::string> extended;
  // One extend script per queue (one slot each), in slices: a huge heartbeat never holds Redis long.
  for (const auto& [queue, qids] : store_.group_by_queue(ids))
    for (auto& id : store_.extend(queue, worker_id, visibility_ms, qids)) extended.push_back(std::move(id));
  return extended;
}

json JobService::ack(const std::string& id, const json* result, const std::string& worker_id) {
  require_job_id(id, "job_id");
  const auto queue = queue_of_or_404(id);
  const auto result_json = result && !result->is_null() ? result->dump() : std::string();
  return dispatch_workflow_callbacks(store_, checked(store_.ack(queue, id, result_json, worker_id), id, "acknowledge")).envelope();
}

// Decides what a failure does to a job: retry after backoff, discard, dead
// letter, or (requeue) go back without consuming the attempt.
struct FailurePlan {
  std::string outcome;
  std::int64_t due_ms = 0;
  std::int64_t delay_ms = 0;  // retry: the backoff chosen (NACK replies carry it as retry_delay_ms)
  json error;
  json errors;
};

// Why an attempt ended. A handler failure (NACK, execution timeout) retries after
// backoff (ojs-retry.md); a lost reservation (visibility timeout, worker gone)
// returns the job to `available` at once (ojs-core.md §6, ojs-worker-protocol.md
// §5.5, §10.2). Both consume the attempt and respect max_attempts.
enum class FailureCause { handler, lost_reservation };

// `poison`: the job's own retry policy cannot be read; it goes to the dead letter.
static FailurePlan plan_failure(const JobRecord& snapshot, const json& reported_error, bool requeue,
                                FailureCause cause = FailureCause::handler, bool poison = false) {
  FailurePlan plan;
  const int attempt = snapshot.attempt();
  const json doc = poison ? json() : json::parse(snapshot.get("doc"), nullptr, false);
  RetryPolicy policy =
      doc.is_object() && doc.contains("retry") ? parse_retry_policy(doc["retry"], "retry") : RetryPolicy{};
  if (poison) policy.on_exhaustion = "dead_letter";
  plan.error = normalise_error(reported_error, attempt);
  const bool non_retryable = !plan.error["retryable"].get<bool>() || matches_non_retryable(policy, plan.error);
  const int max_attempts = static_cast<int>(snapshot.get_int("max_attempts").value_or(policy.max_attempts));
  if (requeue) {
    plan.outcome = "requeue";
  } else if (!non_retryable && attempt < max_attempts && cause == FailureCause::lost_reservation) {
    plan.outcome = "reclaim";
  } else if (!non_retryable && attempt < max_attempts) {
    plan.outcome = "retry";
    plan.delay_ms = retry_delay_ms(policy, attempt, unit_random());
    plan.due_ms = now_ms() + plan.delay_ms;
  } else {
    plan.outcome = policy.on_exhaustion == "dead_letter" ? "dead_letter" : "discard";
    // A job with committed checkpoints holds progress worth resuming: dead letter, never discard.
    if (!snapshot.get("last_checkpoint").empty()) plan.outcome = "dead_letter";
  }
  plan.errors = json::parse(snapshot.get("errors").empty() ? "[]" : snapshot.get("errors"), nullptr, false);
  if (!plan.errors.is_array()) plan.errors = json::array();
  if (!requeue) plan.errors.push_back(plan.error);
  return plan;
}

json JobService::fail(const std::string& id, const json& error, bool requeue, const std::string& worker_id) {
  require_job_id(id, "job_id");
  if (!error.is_null() && !error.is_object()) throw invalid_field("error", "must be an object with at least a message");
  // A GPU fault (the worker's XID policy stopped the job on a failed GPU) is the
  // hardware's, not the job's: requeued without consuming the attempt, and recorded.
  const bool gpu_fault = error.is_object() && error.value("type", std::string()) == kGpuFaultType;
  requeue = requeue || gpu_fault;
  const auto queue = queue_of_or_404(id);
  for (int tries = 0; tries < 3; ++tries) {
    auto snapshot = store_.get(queue, id);
    if (!snapshot) throw not_found(id);
    if (snapshot->state() != "active") {
      if (replays_its_last_failure(*snapshot, error, requeue, worker_id)) return snapshot->envelope();
      checked(Transition{TransitionStatus::conflict, snapshot->state(), {}}, id, "fail");
    }
    FailurePlan plan = plan_failure(*snapshot, error, requeue);
    if (gpu_fault) plan.errors.push_back(plan.error);
    const Transition t = store_.fail(*snapshot, plan.outcome, plan.due_ms,
                                     requeue && !gpu_fault ? std::string() : plan.error.dump(), plan.errors.dump(), false,
                                     worker_id);
    if (t.status == TransitionStatus::stale) continue;
    json envelope = dispatch_workflow_callbacks(store_, checked(t, id, "fail")).envelope();
    if (plan.outcome == "retry") envelope["retry_delay_ms"] = plan.delay_ms;  // the OpenAPI's NACK property
    return envelope;
  }
  throw OjsError(ErrorCode::conflict, "job " + id + " kept changing while failing it; retry", {{"job_id", id}});
}

int JobService::reclaim_expired(const std::string& queue) {
  return reclaim(queue, store_.expired_active(queue, now_ms(), 100), true);
}

int JobService::reclaim_from_lost_workers(const std::string& queue, const std::set<std::string>& lost_workers) {
  std::vector<std::string> ids;
  for (const auto& [id, worker] : store_.active_jobs(queue))
    if (lost_workers.count(worker)) ids.push_back(id);
  return reclaim(queue, ids, false);
}

int JobService::reclaim(const std::string& queue, const std::vector<std::string>& ids, bool require_expired) {
  int reclaimed = 0;
  for (const auto& id : ids) {
    auto snapshot = store_.get(queue, id);
    if (!snapshot || snapshot->state() != "active") continue;
    const auto worker = snapshot->get("worker_id");
    const auto exec_deadline = snapshot->get_int("execution_deadline");
    json error;
    FailureCause cause = FailureCause::lost_reservation;
    if (!require_expired) {
      error = {{"code", "worker_lost"}, {"type", "worker_death"}, {"message", "worker " + worker + " stopped sending heartbeats"}};
    } else if (exec_deadline && *exec_deadline <= now_ms()) {
      error = {{"code", "timeout"}, {"message", "job exceeded its execution timeout on worker " + worker}};
      cause = FailureCause::handler;  // the job ran too long: a failure of the job, with backoff
    } else {
      error = {{"code", "visibility_timeout"},
               {"message", "worker " + worker + " did not finish or heartbeat before its visibility timeout"}};
    }
    error["retryable"] = true;
    FailurePlan plan;
    try {
      plan = plan_failure(*snapshot, error, false, cause);
    } catch (const std::exception& e) {  // a poison job (unreadable retry policy) ends in the dead letter, the pass goes on
      plan = plan_failure(*snapshot, {{"code", "invalid_job"}, {"retryable", false},
                                      {"message", std::string("job cannot be retried: ") + e.what()}}, false,
                          FailureCause::handler, true);
    }
    const Transition t =
        store_.fail(*snapshot, plan.outcome, plan.due_ms, plan.error.dump(), plan.errors.dump(), require_expired);
    if (t.status == TransitionStatus::ok) {
      dispatch_workflow_callbacks(store_, t.job);
      ++reclaimed;
    }
  }
  return reclaimed;
}

}  // namespace ojs::broker
