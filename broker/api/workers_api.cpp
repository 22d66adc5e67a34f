// Worker-side operations: FETCH, ACK, FAIL (nack), BEAT (heartbeat), and the
// admin endpoints that list workers and set a worker's lifecycle directive.
#include <algorithm>
#include <map>
#include <optional>

#include "broker/admin/job_listing.hpp"
#include "broker/api/api.hpp"
#include "broker/api/heartbeat_request.hpp"
#include "broker/observability/metrics.hpp"
#include "broker/observability/overview.hpp"
#include "broker/api/json_io.hpp"
#include "broker/auth/identity.hpp"
#include "broker/preemption/preemption.hpp"
#include "broker/workers/liveness.hpp"
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
// timestamps) plus `job_id` and the full `job`, as the OJS response schemas allow;
// the job is serialized once.
ObjectText transition_reply(ObjectText job) {
  const auto id = job.value_text("id");  // JSON text already
  job.put("job", job.str());
  job.put("job_id", id.empty() ? "null" : id);
  return job;
}

// ACK and FAIL may name the worker (our workers do); then only the holder may finish the job.
std::string optional_worker(const nlohmann::json& body) {
  return body.contains("worker_id") ? require_worker_id(body["worker_id"], "worker_id") : std::string();
}

std::string directive_for(const std::string& state) { return state == "running" ? "" : state; }

// The heartbeat reply's `state` (ojs-worker-protocol.md §2.3, §4.4): the worker's own
// lifecycle state as it reports it, or the broker's directive, whichever is further on
// (running < quiet < terminate): a worker that quieted itself is not told to run, and
// no reply moves a worker backward. The reported state is not stored as a directive,
// so a worker resumed by SIGCONT is told `running` again.
const std::vector<std::string> kLifecycle = {"running", "quiet", "terminate"};

std::string reported_state(const nlohmann::json& body) {  // "" when the heartbeat has none
  if (!body.contains("state")) return {};
  const auto& v = body["state"];
  if (!v.is_string() || std::find(kLifecycle.begin(), kLifecycle.end(), v.get<std::string>()) == kLifecycle.end())
    throw invalid_field("state", "must be one of running, quiet, terminate");
  return v.get<std::string>();
}

std::string reply_state(const std::string& directive, const std::string& reported) {
  const auto rank = [](const std::string& s) { return std::find(kLifecycle.begin(), kLifecycle.end(), s) - kLifecycle.begin(); };
  return !reported.empty() && rank(reported) > rank(directive) && rank(directive) < 3 ? reported : directive;
}

// The test hook behind --test-directives: the furthest lifecycle state (quiet,
// terminate) that a named job's meta.test_directive asks for, "" when none does.
std::string test_directive(ApiContext& ctx, const std::vector<std::string>& job_ids) {
  std::string out;
  for (const auto& id : job_ids) {
    nlohmann::json job;
    try {
      job = ctx.views.info(id);
    } catch (const OjsError&) {
      continue;  // gone: no directive
    }
    const auto meta = job.value("meta", nlohmann::json::object());
    const auto asked = meta.is_object() ? meta.value("test_directive", nlohmann::json()) : nlohmann::json();
    if (asked == "terminate" || (asked == "quiet" && out.empty())) out = asked.get<std::string>();
  }
  return out;
}

// Whether the worker's last capabilities list a device with this index.
bool advertises_device(const nlohmann::json& capabilities, int index) {
  try {
    const auto devices = ml::parse_capabilities(capabilities).devices;
    return std::any_of(devices.begin(), devices.end(), [&](const ml::GpuDevice& d) { return d.index == index; });
  } catch (const std::exception&) {
    return false;
  }
}

// A FETCH body, checked whole before anything is done (ACK-with-fetch checks its
// `fetch` object this way before the ACK is applied).
struct CheckedFetch {
  FetchRequest request;
  std::string incarnation;  // worker_incarnation: which run of the worker process
  bool named_worker = false;
};

CheckedFetch check_fetch(const ApiContext& ctx, const nlohmann::json& body) {
  if (body.contains("queues") && body["queues"].is_array() && body["queues"].size() > static_cast<std::size_t>(ctx.config.max_fetch_queues))
    throw invalid_field("queues", "must name at most " + std::to_string(ctx.config.max_fetch_queues) + " queues (--max-fetch-queues)");
  auto request = FetchRequest::parse(body, ctx.config.max_fetch_count);
  return {std::move(request), worker_incarnation(body), body.contains("worker_id")};
}

// FETCH's reply: {jobs, job (the first), state, directive, job_directives, gangs?};
// each job is serialized once.
ObjectText serve_fetch(ApiContext& ctx, const CheckedFetch& fetch) {
  // The worker's contact (its state, load, preemption marks and capacity guards) and the claims.
  auto got = ctx.fetch.fetch(fetch.request, fetch.incarnation);
  for (const auto& [queue, n] : got.dispatched) obs::Metrics::global().record_dispatch(queue, fetch.request.pool, n);
  ObjectText out;
  std::string jobs = "[";
  for (const auto& text : got.jobs) {
    if (jobs.size() > 1) jobs += ',';
    jobs += text;
  }
  jobs += ']';
  out.put("jobs", std::move(jobs));
  if (!got.jobs.empty()) out.put("job", got.jobs.front());
  out.put_json("state", got.state);
  out.put_json("directive", directive_for(got.state));
  out.put_json("job_directives", preemption_directives(got.preempting));
  // The running gangs it is a member of, as the heartbeat tells them, so a member that
  // fetches learns a resize too. Only a worker the contact's held read shows in a gang
  // is asked about: a FETCH of a worker in no gang costs no round trip more.
  if (!got.gang_jobs.empty())
    if (auto gangs = ctx.jobs.gang_rendezvous_of(fetch.request.worker_id, got.gang_jobs); !gangs.empty())
      out.put_json("gangs", gangs);
  return out;
}

// The ACK/NACK body's optional `fetch` object: a FETCH body whose worker is the
// report's. Errors name the field under `fetch.`.
std::optional<CheckedFetch> attached_fetch(const ApiContext& ctx, const nlohmann::json& body, const std::string& worker) {
  if (!body.contains("fetch") || body["fetch"].is_null()) return std::nullopt;
  const auto& fetch = body["fetch"];
  if (!fetch.is_object()) throw invalid_field("fetch", "must be an object with the fields of a FETCH request");
  if (worker.empty()) throw invalid_field("worker_id", "is required when the request carries `fetch`");
  if (fetch.contains("worker_id") && fetch["worker_id"] != nlohmann::json(worker))
    throw invalid_field("fetch.worker_id", "must be absent or equal to worker_id");
  nlohmann::json request = fetch;
  request["worker_id"] = worker;
  try {
    auto checked = check_fetch(ctx, request);
    // The capabilities are read whole here too (FETCH reads them when it claims): a
    // bad one is the request's 400, before the report is applied.
    if (checked.request.capabilities) ml::parse_capabilities(*checked.request.capabilities);
    return checked;
  } catch (const OjsError& e) {
    throw under_field("fetch.", e);
  }
}

// The fetch part of ACK-with-fetch. The report already stands: a failure here (the
// broker draining, Redis gone) is the fetch's own `error`, with no jobs.
std::string serve_attached_fetch(ApiContext& ctx, const HttpRequest& r, const CheckedFetch& fetch) {
  try {
    ctx.drain.check(r, "POST /ojs/v1/workers/fetch");  // draining: no new work, as for FETCH
    return serve_fetch(ctx, fetch).str();
  } catch (...) {
    const auto error = failure_as_ojs_error(std::current_exception(), "fetch attached to " + r.path);
    return json_text({{"jobs", nlohmann::json::array()}, {"error", error.to_json()["error"]}});
  }
}

// A heartbeat: the worker's contact, the leases of the jobs it names extended, and
// the state it is told. POST /ojs/v1/workers/beat is ojs-graceful-shutdown.md's
// heartbeat: `active_jobs` may be a bare count there, and `state: "drain"` announces a worker shutting down,
// recorded as the drain directive (no new job; terminate once idle), which it never
// leaves. Both answer `acknowledged: true` besides the worker protocol's reply.
HttpResponse heartbeat(ApiContext& ctx, const HttpRequest& r, bool shutdown_beat) {
  auto body = parse_json_body(r);
  if (!body.contains("worker_id")) throw invalid_field("worker_id", "is required");
  const auto worker_id = require_worker_id(body["worker_id"], "worker_id");
  auth::authorize_worker_id(worker_id);
  bool draining = false;
  if (shutdown_beat && body.is_object()) {
    if (body.contains("active_jobs") && body["active_jobs"].is_number_integer() && !body.contains("active_job_ids"))
      body.erase("active_jobs");  // a count without ids names no job to extend
    draining = body.value("state", nlohmann::json()) == "drain";
    if (draining) body.erase("state");
  }
  const auto ids = heartbeat_job_ids(body);  // both documented shapes
  const auto reported = reported_state(body);
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
  const auto incarnation = worker_incarnation(body);  // refuses a malformed hostname (400)
  if (body.contains("hostname") && body["hostname"].is_string() && !body["hostname"].get<std::string>().empty())
    ctx.workers.note_hostname(worker_id, body["hostname"].get<std::string>());  // the admin listing's hostname
  auto contact = ctx.workers.contact(worker_id, has_caps ? &caps : nullptr, {}, incarnation, ids.size());
  if (draining && contact.state != "drain" && contact.state != "terminate" && ctx.workers.set_state(worker_id, "drain"))
    contact.state = "drain";
  auto state = reply_state(contact.state, reported);
  if (ctx.config.test_directives) state = reply_state(state, test_directive(ctx, ids));
  nlohmann::json extended = nlohmann::json::array();
  const auto extended_ids = ctx.jobs.extend(worker_id, visibility.value_or(ctx.config.default_visibility_timeout_ms), ids);
  for (const auto& id : extended_ids) extended.push_back(id);
  // A member told to leave whose worker no longer lists the job has left: released
  // now, not at its deadline (its NACK may still come: the release is idempotent).
  if (lists_running_jobs(body)) {
    std::vector<std::string> leaving;
    for (const auto& m : contact.held.preempting)
      if (m.leave) leaving.push_back(m.job_id);
    if (!leaving.empty()) {
      const auto released = ctx.jobs.end_leaves_not_running(worker_id, leaving, ids);
      std::erase_if(contact.held.preempting, [&](const auto& m) {
        return m.leave && std::find(released.begin(), released.end(), m.job_id) != released.end();
      });
    }
  }
  // The gangs among them, as this member sees them now: an elastic gang's resize
  // reaches it here. Only the jobs the contact's held read shows as gang jobs are
  // asked about: a heartbeat of a worker in no gang costs no round trip more.
  std::vector<std::string> gang_ids;
  for (const auto& id : extended_ids)
    if (std::find(contact.held.gang_jobs.begin(), contact.held.gang_jobs.end(), id) != contact.held.gang_jobs.end()) gang_ids.push_back(id);
  auto gangs = gang_ids.empty() ? nlohmann::json::array() : ctx.jobs.gang_rendezvous_of(worker_id, gang_ids);
  return json_reply(200, {{"state", state},
                          {"directive", directive_for(state)},
                          {"jobs_extended", extended},
                          {"gangs", std::move(gangs)},
                          {"job_directives", preemption_directives(contact.held.preempting)},
                          {"server_time", format_rfc3339(now_ms())},
                          {"acknowledged", true}});
}

// One worker of the admin listing (ojs-admin-api.md §9.1). `held`: the active jobs
// each worker holds, from the active indexes.
nlohmann::json admin_worker_entry(ApiContext& ctx, const WorkerInfo& w, bool stale, const std::map<std::string, long long>& held) {
  // GPUs free = advertised count minus what the worker's active jobs hold and the
  // devices out of service (unhealthy or drained).
  const auto load = ctx.workers.load(w.id);
  const long long total = obs::advertised_gpus(w.capabilities);  // gpu.count, else devices[] (as the overview counts)
  std::vector<std::string> queues = w.fetched_queues;
  for (const auto& q : w.queues)
    if (std::find(queues.begin(), queues.end(), q) == queues.end()) queues.push_back(q);
  std::sort(queues.begin(), queues.end());
  std::string hostname = w.hostname;
  if (hostname.empty() && w.capabilities.is_object() && w.capabilities.value("hostname", nlohmann::json()).is_string())
    hostname = w.capabilities["hostname"].get<std::string>();
  const auto held_here = held.find(w.id);
  const long long active = std::max<long long>(held_here == held.end() ? 0 : held_here->second,
                                               static_cast<long long>(load.active.size()));
  // A stale worker is listed as such, not as running: `directive` keeps what it was told.
  nlohmann::json entry = {{"id", w.id}, {"state", stale ? std::string("stale") : w.state}, {"directive", w.state}, {"stale", stale},
                         {"hostname", hostname.empty() ? nlohmann::json(nullptr) : nlohmann::json(hostname)},
                         {"last_heartbeat_at", format_rfc3339(w.last_seen_ms)}, {"last_seen", format_rfc3339(w.last_seen_ms)},
                         {"queues", queues}, {"capabilities", w.capabilities}, {"active_jobs", active},
                         {"gpus_total", total}, {"gpus_in_use", load.gpus_in_use()},
                         {"gpus_free", std::max(0LL, total - load.gpus_in_use() - obs::out_of_service_gpus(w.capabilities, w.drained_devices))},
                         {"drained_devices", w.drained_devices}};
  entry["unhealthy_devices"] = ml::unhealthy_devices(w.capabilities);  // which device, and why
  return entry;
}

// ACK (POST /workers/ack or /jobs/{id}/ack) of job `id`.
HttpResponse ack(ApiContext& ctx, const HttpRequest& r, const nlohmann::json& body, const std::string& id) {
  const nlohmann::json* result = body.contains("result") ? &body["result"] : nullptr;
  const auto worker = optional_worker(body);
  const auto next = attached_fetch(ctx, body, worker);  // checked before the ACK is applied
  auth::authorize_worker_id(worker);
  auto out = transition_reply(ctx.jobs.ack(id, result, worker));
  out.put_json("acknowledged", true);
  if (next) out.put("fetch", serve_attached_fetch(ctx, r, *next));
  return object_reply(200, out);
}

// NACK (POST /workers/nack or /jobs/{id}/nack) of job `id`.
HttpResponse nack(ApiContext& ctx, const HttpRequest& r, const nlohmann::json& body, const std::string& id) {
  bool requeue = false;
  if (body.contains("requeue")) {
    if (!body["requeue"].is_boolean()) throw invalid_field("requeue", "must be a boolean");
    requeue = body["requeue"].get<bool>();
  }
  const nlohmann::json error = body.contains("error") ? body["error"] : nlohmann::json(nullptr);
  const auto worker = optional_worker(body);
  const auto next = attached_fetch(ctx, body, worker);
  auth::authorize_worker_id(worker);
  auto out = transition_reply(ObjectText(ctx.jobs.fail(id, error, requeue, worker)));
  if (next) out.put("fetch", serve_attached_fetch(ctx, r, *next));
  return object_reply(200, out);
}

// The job id of POST /jobs/{id}/ack or /nack: the path's; a body job_id must agree.
std::string path_job_id(const HttpRequest& r, const nlohmann::json& body) {
  const auto& id = r.params.at("id");
  if (body.contains("job_id") && body["job_id"] != nlohmann::json(id))
    throw invalid_field("job_id", "must be absent or equal to the job id in the path (" + id + ")");
  return id;
}

// FETCH, ACK, NACK, the heartbeats and a worker's health: what a worker calls.
void register_worker_protocol(Router& router, ApiContext& ctx) {
  router.add("POST", "/ojs/v1/workers/fetch", [&ctx](const HttpRequest& r) {
    const auto fetch = check_fetch(ctx, parse_json_body(r));
    auth::authorize_worker_id(fetch.named_worker ? fetch.request.worker_id : std::string());
    return object_reply(200, serve_fetch(ctx, fetch));
  }, Runs::on_io_thread);

  // ACK and NACK with an optional `fetch` (docs/http-api.md "ACK with fetch"): the
  // report is applied first and stands whatever the fetch part then meets.
  router.add("POST", "/ojs/v1/workers/ack", [&ctx](const HttpRequest& r) {
    const auto body = parse_json_body(r);
    return ack(ctx, r, body, required_string(body, "job_id"));
  }, Runs::on_io_thread);
  router.add("POST", "/ojs/v1/workers/nack", [&ctx](const HttpRequest& r) {
    const auto body = parse_json_body(r);
    return nack(ctx, r, body, required_string(body, "job_id"));
  }, Runs::on_io_thread);
  // The public suites' POST /jobs/{id}/ack and /nack: the same calls, the job id in the
  // path (on the handler pool: the router serves routes with parameters there).
  router.add("POST", "/ojs/v1/jobs/{id}/ack", [&ctx](const HttpRequest& r) {
    const auto body = parse_json_body(r);
    return ack(ctx, r, body, path_job_id(r, body));
  });
  router.add("POST", "/ojs/v1/jobs/{id}/nack", [&ctx](const HttpRequest& r) {
    const auto body = parse_json_body(r);
    return nack(ctx, r, body, path_job_id(r, body));
  });

  for (const bool shutdown_beat : {false, true})
    router.add("POST", shutdown_beat ? "/ojs/v1/workers/beat" : "/ojs/v1/workers/heartbeat",
               [&ctx, shutdown_beat](const HttpRequest& r) { return heartbeat(ctx, r, shutdown_beat); }, Runs::on_io_thread);

  // One worker's state as the broker sees it (ojs-graceful-shutdown.md): its
  // directive (running, quiet, drain, terminate), or stale once silent past
  // --worker-dead-after-ms. 404 for a worker never in contact.
  router.add("GET", "/ojs/v1/workers/{id}/health", [&ctx](const HttpRequest& r) {
    const auto& id = r.params.at("id");
    if (!is_valid_worker_id(id)) throw invalid_field("id", kWorkerIdRule);
    const auto worker = ctx.workers.get(id);
    if (!worker) throw OjsError(ErrorCode::not_found, "worker " + id + " not found", {{"worker_id", id}});
    const bool stale = worker_lost(*worker, now_ms(), ctx.config.worker_dead_after_ms);
    return json_reply(200, {{"worker_id", id}, {"state", stale ? std::string("stale") : worker->state}, {"stale", stale},
                            {"directive", directive_for(worker->state == "drain" ? "quiet" : worker->state)},
                            {"last_heartbeat_at", format_rfc3339(worker->last_seen_ms)}});
  });

}

// The admin listing, lifecycle directives and per-device drain.
void register_worker_admin(Router& router, ApiContext& ctx) {
  // ojs-admin-api.md §9.1: {items, summary, pagination}; `workers` (the list's earlier
  // name) kept alongside for one release. active_jobs counts what the worker holds
  // in the active indexes (a worker without capabilities keeps no held sets).
  router.add("GET", "/ojs/v1/admin/workers", [&ctx](const HttpRequest& r) {
    const int page = int_query(r, "page", 1, 1, 1000000);
    const int per_page = int_query(r, "per_page", 100, 1, 1000);
    const auto held = admin::active_jobs_by_worker(ctx.admin.listing);
    const auto now = now_ms();
    const auto workers = ctx.workers.list();
    nlohmann::json list = nlohmann::json::array();
    std::map<std::string, long long> summary = {{"running", 0}, {"quiet", 0}, {"terminate", 0}, {"drain", 0}, {"stale", 0}};
    for (const auto& w : workers) {
      const bool stale = worker_lost(w, now, ctx.config.worker_dead_after_ms);  // silent past --worker-dead-after-ms
      ++summary[stale ? "stale" : w.state];
      const auto index = static_cast<long long>(&w - workers.data());
      if (index < static_cast<long long>(page - 1) * per_page || static_cast<long long>(list.size()) >= per_page) continue;
      list.push_back(admin_worker_entry(ctx, w, stale, held));
    }
    nlohmann::json sum = {{"total", workers.size()}};
    for (const auto& [k, v] : summary) sum[k] = v;
    return json_reply(200, {{"items", list},
                            {"summary", sum},
                            {"pagination", {{"total", workers.size()}, {"page", page}, {"per_page", per_page}}},
                            {"workers", list}});
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
  // Per-GPU drain: a drained device takes no new job (FETCH places nothing there);
  // what runs on it finishes. Undrain gives it back.
  for (const bool drain : {true, false}) {
    const std::string path = std::string("/ojs/v1/admin/workers/{id}/devices/{index}/") + (drain ? "drain" : "undrain");
    router.add("POST", path, [&ctx, drain](const HttpRequest& r) {
      const auto& id = r.params.at("id");
      if (!is_valid_worker_id(id)) throw invalid_field("id", kWorkerIdRule);
      const auto& text = r.params.at("index");
      if (text.empty() || text.size() > 4 || !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
        throw invalid_field("index", "must be a device index, an integer from 0 to 1023");
      const int index = std::stoi(text);
      if (index > 1023) throw invalid_field("index", "must be a device index, an integer from 0 to 1023");
      const auto worker = ctx.workers.get(id);
      if (!worker) throw OjsError(ErrorCode::not_found, "worker " + id + " not found", {{"worker_id", id}});
      if (drain && !advertises_device(worker->capabilities, index))
        throw OjsError(ErrorCode::not_found, "worker " + id + " advertises no device " + text,
                       {{"worker_id", id}, {"index", index}});
      const auto drained = ctx.workers.set_device_drained(id, index, drain);
      return json_reply(200, {{"worker", {{"id", id}, {"drained_devices", drained}}}});
    });
  }
}

}  // namespace

void register_workers_api(Router& router, ApiContext& ctx) {
  register_worker_protocol(router, ctx);
  register_worker_admin(router, ctx);
}

}  // namespace ojs::broker
