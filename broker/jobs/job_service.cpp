#include "broker/jobs/job_service.hpp"

#include <random>
#include <set>

#include "ojs/core/envelope.hpp"
#include "ojs/core/error.hpp"
#include "ojs/core/time.hpp"
#include "ojs/core/uuid.hpp"

namespace ojs::broker {

using nlohmann::json;

namespace {

double unit_random() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

OjsError not_found(const std::string& id) {
  return OjsError(ErrorCode::not_found, "job " + id + " not found", {{"job_id", id}});
}

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
    if (!body["worker_id"].is_string() || body["worker_id"].get<std::string>().empty())
      throw invalid_field("worker_id", "must be a non-empty string");
    r.worker_id = body["worker_id"].get<std::string>();
  } else {
    r.worker_id = "anonymous";
  }
  if (body.contains("visibility_timeout_ms")) {
    if (!body["visibility_timeout_ms"].is_number_integer() || body["visibility_timeout_ms"].get<long long>() < 0)
      throw invalid_field("visibility_timeout_ms", "must be an integer >= 0");
    r.visibility_timeout_ms = body["visibility_timeout_ms"].get<long long>();
  }
  if (body.contains("capabilities") && !body["capabilities"].is_null()) {
    if (!body["capabilities"].is_object()) throw invalid_field("capabilities", "must be an object");
    r.capabilities = body["capabilities"];
  }
  return r;
}

json JobService::push(const json& body) {
  NewJob job = parse_enqueue_request(body, now_ms());
  const JobClassification cls = scheduler_.classify(job.document, job.priority);
  if (!store_.reserve_id(job.id, job.queue))
    throw OjsError(ErrorCode::duplicate, "a job with id " + job.id + " already exists", {{"job_id", job.id}});

  std::vector<std::pair<std::string, std::string>> fields{
      {"doc", job.document.dump()},
      {"queue", job.queue},
      {"type", job.type},
      {"priority", std::to_string(job.priority)},
      {"max_attempts", std::to_string(job.retry.max_attempts)},
  };
  if (job.visibility_timeout_ms) fields.emplace_back("visibility_timeout_ms", std::to_string(*job.visibility_timeout_ms));
  if (job.expires_at_ms) fields.emplace_back("expires_at", std::to_string(*job.expires_at_ms));
  // Execution deadline: ext_ml_timeout_seconds overrides the OJS timeout_ms.
  std::optional<std::int64_t> timeout_ms = job.timeout_ms;
  if (job.document.contains("ext_ml_timeout_seconds") && job.document["ext_ml_timeout_seconds"].is_number_integer())
    timeout_ms = job.document["ext_ml_timeout_seconds"].get<std::int64_t>() * 1000;
  if (timeout_ms && *timeout_ms > 0) fields.emplace_back("timeout_ms", std::to_string(*timeout_ms));
  const Transition t = store_.push(job.queue, job.id, cls.class_id, cls.class_json, cls.rank_base, job.scheduled_at_ms, fields);
  if (t.status == TransitionStatus::duplicate)
    throw OjsError(ErrorCode::duplicate, "a job with id " + job.id + " already exists", {{"job_id", job.id}});
  return t.job.envelope();
}

std::string JobService::queue_of_or_404(const std::string& id) {
  auto queue = store_.queue_of(id);
  if (!queue) throw not_found(id);
  return *queue;
}

json JobService::info(const std::string& id) {
  auto record = store_.get(id);
  if (!record) throw not_found(id);
  return record->envelope();
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
  return checked(store_.cancel(queue, id), id, "cancel").envelope();
}

std::vector<json> JobService::fetch(const FetchRequest& request) {
  std::vector<json> jobs;
  const WorkerView worker{request.worker_id, request.capabilities ? &*request.capabilities : nullptr};
  for (const auto& queue : request.queues) {
    const int want = request.count - static_cast<int>(jobs.size());
    if (want <= 0) break;
    ClassSet classes = store_.load_classes(queue);
    for (int tries = 0; tries < 3; ++tries) {
      const auto eligible = scheduler_.eligible(queue, classes, worker);
      if (eligible.empty()) break;
      auto outcome = store_.claim(queue, request.worker_id, request.visibility_timeout_ms,
                                  config_.default_visibility_timeout_ms, want, classes.version, eligible);
      if (outcome.status == TransitionStatus::stale) {  // a new class appeared since we looked
        classes = store_.load_classes(queue);
        continue;
      }
      for (const auto& record : outcome.jobs) jobs.push_back(record.envelope());
      break;
    }
  }
  return jobs;
}

json JobService::ack(const std::string& id, const json* result, const std::string& worker_id) {
  require_job_id(id, "job_id");
  const auto queue = queue_of_or_404(id);
  const auto result_json = result && !result->is_null() ? result->dump() : std::string();
  return checked(store_.ack(queue, id, result_json, worker_id), id, "acknowledge").envelope();
}

// Decides what a failure does to a job: retry after backoff, discard, dead
// letter, or (requeue) go back without consuming the attempt.
struct FailurePlan {
  std::string outcome;
  std::int64_t due_ms = 0;
  json error;
  json errors;
};

static FailurePlan plan_failure(const JobRecord& snapshot, const json& reported_error, bool requeue) {
  FailurePlan plan;
  const int attempt = snapshot.attempt();
  const json doc = json::parse(snapshot.get("doc"), nullptr, false);
  const RetryPolicy policy =
      doc.is_object() && doc.contains("retry") ? parse_retry_policy(doc["retry"], "retry") : RetryPolicy{};
  plan.error = normalise_error(reported_error, attempt);
  const auto& codes = policy.non_retryable_errors;
  const bool non_retryable = !plan.error["retryable"].get<bool>() ||
                             std::find(codes.begin(), codes.end(), plan.error["code"].get<std::string>()) != codes.end();
  const int max_attempts = static_cast<int>(snapshot.get_int("max_attempts").value_or(policy.max_attempts));
  if (requeue) {
    plan.outcome = "requeue";
  } else if (!non_retryable && attempt < max_attempts) {
    plan.outcome = "retry";
    plan.due_ms = now_ms() + retry_delay_ms(policy, attempt, unit_random());
  } else {
    plan.outcome = policy.on_exhaustion == "dead_letter" ? "dead_letter" : "discard";
  }
  plan.errors = json::parse(snapshot.get("errors").empty() ? "[]" : snapshot.get("errors"), nullptr, false);
  if (!plan.errors.is_array()) plan.errors = json::array();
  if (!requeue) plan.errors.push_back(plan.error);
  return plan;
}

json JobService::fail(const std::string& id, const json& error, bool requeue, const std::string& worker_id) {
  require_job_id(id, "job_id");
  if (!error.is_null() && !error.is_object()) throw invalid_field("error", "must be an object with at least a message");
  const auto queue = queue_of_or_404(id);
  for (int tries = 0; tries < 3; ++tries) {
    auto snapshot = store_.get(queue, id);
    if (!snapshot) throw not_found(id);
    if (snapshot->state() != "active") checked(Transition{TransitionStatus::conflict, snapshot->state(), {}}, id, "fail");
    const FailurePlan plan = plan_failure(*snapshot, error, requeue);
    const Transition t = store_.fail(queue, id, snapshot->attempt(), plan.outcome, plan.due_ms,
                                     requeue ? std::string() : plan.error.dump(), plan.errors.dump(), false, worker_id);
    if (t.status == TransitionStatus::stale) continue;
    return checked(t, id, "fail").envelope();
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
    if (!require_expired)
      error = {{"code", "worker_lost"}, {"message", "worker " + worker + " stopped sending heartbeats"}};
    else if (exec_deadline && *exec_deadline <= now_ms())
      error = {{"code", "timeout"}, {"message", "job exceeded its execution timeout on worker " + worker}};
    else
      error = {{"code", "visibility_timeout"},
               {"message", "worker " + worker + " did not finish or heartbeat before its visibility timeout"}};
    error["retryable"] = true;
    const FailurePlan plan = plan_failure(*snapshot, error, false);
    const Transition t = store_.fail(queue, id, snapshot->attempt(), plan.outcome, plan.due_ms, plan.error.dump(),
                                     plan.errors.dump(), require_expired);
    if (t.status == TransitionStatus::ok) ++reclaimed;
  }
  return reclaimed;
}

}  // namespace ojs::broker
