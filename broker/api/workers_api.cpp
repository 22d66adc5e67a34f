// Worker-side operations: FETCH, ACK, FAIL (nack), BEAT (heartbeat), and the
// admin endpoints that set a worker's lifecycle directive.
#include "broker/api/api.hpp"
#include "broker/api/heartbeat_request.hpp"
#include "broker/observability/overview.hpp"
#include "broker/api/json_io.hpp"
#include "broker/auth/identity.hpp"
#include "broker/preemption/preemption.hpp"
#include "ojs/core/envelope.hpp"
#include "ojs/core/error.hpp"
#include "ojs/core/time.hpp"
#include "ojs/ml/capabilities.hpp"

namespace ojs::broker {

namespace {

std::string required_string(const nlohmann::json& body, const char* field) {
  if (!body.contains(field)) throw invalid_field(field, "is required");
  if (!body[field].is_string() || body[field].get<std::string>().empty()) throw invalid_field(field, "must be a non-empty string");
  return body[field].get<std::string>();
}

// ACK and FAIL answer with the job's top-level attributes (id, state, attempt,
// timestamps) plus `job_id` and the full `job`, as the OJS response schemas allow.
nlohmann::json transition_reply(nlohmann::json job) {
  nlohmann::json out = job;
  out["job_id"] = job["id"];
  out["job"] = std::move(job);  // one copy of the job, not two
  return out;
}

// ACK and FAIL may name the worker (our workers do); then only the holder may finish the job.
std::string optional_worker(const nlohmann::json& body) {
  return body.contains("worker_id") ? require_worker_id(body["worker_id"], "worker_id") : std::string();
}

std::string directive_for(const std::string& state) { return state == "running" ? "" : state; }

}  // namespace

void register_workers_api(Router& router, ApiContext& ctx) {
  router.add("POST", "/ojs/v1/workers/fetch", [&ctx](const HttpRequest& r) {
    const auto body = parse_json_body(r);
    if (body.contains("queues") && body["queues"].is_array() && body["queues"].size() > static_cast<std::size_t>(ctx.config.max_fetch_queues))
      throw invalid_field("queues", "must name at most " + std::to_string(ctx.config.max_fetch_queues) + " queues (--max-fetch-queues)");
    const auto request = FetchRequest::parse(body, ctx.config.max_fetch_count);
    auth::authorize_worker_id(body.contains("worker_id") ? request.worker_id : std::string());
    // One pipeline records contact and reads what the worker holds (its load, preemption marks and capacity guards).
    const auto contact = ctx.workers.contact(request.worker_id, request.capabilities ? &request.capabilities_text : nullptr, request.queues,
                                             worker_incarnation(body));
    const auto& state = contact.state;
    nlohmann::json out = {{"jobs", nlohmann::json::array()}, {"state", state}, {"directive", directive_for(state)}};
    auto& jobs = out["jobs"];  // filled in place: each job is copied once, for "job"
    // A worker told to be quiet or to terminate gets no new work.
    if (state == "running")
      for (auto& j : ctx.jobs.fetch(request, &contact)) jobs.push_back(std::move(j));
    out["job_directives"] = preemption_directives(contact.held.preempting);
    if (!jobs.empty()) out["job"] = jobs[0];
    return json_reply(200, out);
  });

  router.add("POST", "/ojs/v1/workers/ack", [&ctx](const HttpRequest& r) {
    const auto body = parse_json_body(r);
    const auto id = required_string(body, "job_id");
    const nlohmann::json* result = body.contains("result") ? &body["result"] : nullptr;
    const auto worker = optional_worker(body);
    auth::authorize_worker_id(worker);
    auto out = transition_reply(ctx.jobs.ack(id, result, worker));
    out["acknowledged"] = true;
    return json_reply(200, out);
  });

  router.add("POST", "/ojs/v1/workers/nack", [&ctx](const HttpRequest& r) {
    const auto body = parse_json_body(r);
    const auto id = required_string(body, "job_id");
    bool requeue = false;
    if (body.contains("requeue")) {
      if (!body["requeue"].is_boolean()) throw invalid_field("requeue", "must be a boolean");
      requeue = body["requeue"].get<bool>();
    }
    const nlohmann::json error = body.contains("error") ? body["error"] : nlohmann::json(nullptr);
    const auto worker = optional_worker(body);
    auth::authorize_worker_id(worker);
    return json_reply(200, transition_reply(ctx.jobs.fail(id, error, requeue, worker)));
  });

  router.add("POST", "/ojs/v1/workers/heartbeat", [&ctx](const HttpRequest& r) {
    const auto body = parse_json_body(r);
    if (!body.contains("worker_id")) throw invalid_field("worker_id", "is required");
    const auto worker_id = require_worker_id(body["worker_id"], "worker_id");
    auth::authorize_worker_id(worker_id);
    const auto ids = heartbeat_job_ids(body);  // both documented shapes
    if (ids.size() > static_cast<std::size_t>(ctx.config.max_heartbeat_jobs))  // one directory lookup per id
      throw invalid_field("active_jobs", "must name at most " + std::to_string(ctx.config.max_heartbeat_jobs) + " job ids (--max-heartbeat-jobs)");
    std::optional<std::int64_t> visibility;
    if (body.contains("visibility_timeout_ms")) {
      const auto& v = body["visibility_timeout_ms"];
      if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > kMaxDurationMs)
        throw invalid_field("visibility_timeout_ms", "must be an integer between 0 and " + std::to_string(kMaxDurationMs));
      visibility = body["visibility_timeout_ms"].get<long long>();
    }
    const bool has_caps = body.contains("capabilities") && body["capabilities"].is_object();
    const std::string caps = has_caps ? body["capabilities"].dump() : std::string();
    if (has_caps) ml::require_bounded_capabilities(body["capabilities"], caps.size());
    const auto contact = ctx.workers.contact(worker_id, has_caps ? &caps : nullptr, {}, worker_incarnation(body), ids.size());
    const auto& state = contact.state;
    nlohmann::json extended = nlohmann::json::array();
    for (auto& id : ctx.jobs.extend(worker_id, visibility.value_or(ctx.config.default_visibility_timeout_ms), ids))
      extended.push_back(std::move(id));
    return json_reply(200, {{"state", state},
                            {"directive", directive_for(state)},
                            {"jobs_extended", extended},
                            {"job_directives", preemption_directives(contact.held.preempting)},
                            {"server_time", format_rfc3339(now_ms())}});
  });

  router.add("GET", "/ojs/v1/admin/workers", [&ctx](const HttpRequest&) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& w : ctx.workers.list()) {
      // GPUs free = advertised count minus what the worker's active jobs hold.
      const auto load = ctx.workers.load(w.id);
      const long long total = obs::advertised_gpus(w.capabilities);  // gpu.count, else devices[] (as the overview counts)
      list.push_back({{"id", w.id}, {"state", w.state}, {"last_seen", format_rfc3339(w.last_seen_ms)},
                      {"queues", w.queues}, {"capabilities", w.capabilities}, {"active_jobs", load.active.size()},
                      {"gpus_total", total}, {"gpus_in_use", load.gpus_in_use()},
                      {"gpus_free", std::max(0LL, total - load.gpus_in_use())}});
      list.back()["unhealthy_devices"] = ml::unhealthy_devices(w.capabilities);  // which device, and why
    }
    return json_reply(200, {{"workers", list}});
  });
  // drain: quiet until the worker holds no job, then terminate (WorkerRegistry::contact).
  for (const std::string state : {"quiet", "terminate", "running", "drain"}) {
    const std::string path = "/ojs/v1/admin/workers/{id}/" + std::string(state == "running" ? "resume" : state);
    router.add("POST", path, [&ctx, state](const HttpRequest& r) {
      const auto& id = r.params.at("id");
      if (!is_valid_worker_id(id)) throw invalid_field("id", kWorkerIdRule);  // checked before anything is written
      if (!ctx.workers.set_state(id, state))  // no phantom record for an id never in contact
        throw OjsError(ErrorCode::not_found, "worker " + id + " not found", {{"worker_id", id}});
      const std::string told = state == "drain" ? "quiet" : state;  // what its next contact hears first
      return json_reply(200, {{"worker", {{"id", id}, {"state", state}, {"directive", directive_for(told)}}}});
    });
  }
}

}  // namespace ojs::broker
