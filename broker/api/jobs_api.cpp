// PUSH, INFO and CANCEL: POST /ojs/v1/jobs, GET and DELETE /ojs/v1/jobs/{id}.
#include <algorithm>
#include <chrono>

#include "broker/api/api.hpp"
#include "broker/api/job_scope.hpp"
#include "broker/api/json_io.hpp"
#include "broker/api/rate_limit_state.hpp"
#include "broker/api/tenant_header.hpp"
#include "broker/auth/identity.hpp"
#include "broker/governance/queue_configs.hpp"
#include "broker/estimate/estimate_service.hpp"
#include "broker/uniqueness/idempotent_push.hpp"
#include "broker/uniqueness/unique_push.hpp"
#include "ojs/core/error.hpp"
#include "ojs/core/uuid.hpp"
#include "ojs/core/fibers.hpp"

namespace ojs::broker {

const std::string& job_id_param(const HttpRequest& r) {
  const auto& id = r.params.at("id");
  if (!is_uuidv7(id)) throw invalid_field("id", "must be a lowercase UUIDv7 job id");
  return id;
}

void require_in_tenant_scope(ApiContext& ctx, const std::string& id) {
  const auto scope = auth::tenant_scope();
  if (scope.empty()) return;
  const auto tenant = ctx.views.tenant_of(id);
  if (tenant && *tenant != scope) throw OjsError(ErrorCode::not_found, "job " + id + " not found", {{"job_id", id}});
}

namespace {

// ojs-backpressure.md §5.2: OJS-Block-Timeout, whole seconds a PUSH to
// a full `block` queue may wait for room (absent or 0: answer at once). At most 60:
// a waiting PUSH holds a handler thread.
std::chrono::seconds block_timeout(const HttpRequest& r) {
  constexpr long long kMaxBlockS = 60;
  const auto text = r.header("ojs-block-timeout");
  if (text.empty()) return std::chrono::seconds(0);
  long long s = -1;
  if (text.size() <= 6 && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) s = std::stoll(text);
  if (s < 0 || s > kMaxBlockS)
    throw OjsError(ErrorCode::invalid_request, "OJS-Block-Timeout: must be whole seconds between 0 and 60",
                   {{"field", "OJS-Block-Timeout"}, {"rule", "whole seconds between 0 and 60"}});
  return std::chrono::seconds(s);
}

// The PUSH, tried again while the queue is full under `block` and the request's
// timeout allows: each try is one atomic push.lua call, so room freed on any broker
// is taken by the first try after it. Past the timeout the last 429 is the answer.
// A client that went away meanwhile is not answered: the PUSH stops untried, so the
// job its retry sends is the only one.
PushResult push_waiting_for_room(ApiContext& ctx, const HttpRequest& r, const nlohmann::json& body, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::milliseconds(20);
  for (bool first = true;; first = false) {
    if (!first && r.client_gone && r.client_gone())
      throw OjsError(ErrorCode::unavailable, "the client closed its connection while the PUSH waited for room: nothing was stored",
                     {{"reason", "client_gone"}});
    try {
      return push_job(ctx.unique, body);  // unique policies included
    } catch (const OjsError& e) {
      const bool blocks = e.code() == ErrorCode::queue_full && e.details().value("strategy", "") == "block";
      if (!blocks || std::chrono::steady_clock::now() + pause >= deadline) throw;
    }
    fibers::sleep_for(pause);  // polling: a blocked PUSH is rare and bounded by its timeout
    pause = std::min(pause * 2, std::chrono::milliseconds(250));
  }
}

}  // namespace

void register_push_api(Router& router, ApiContext& ctx, governance::QueueConfigs& configs) {
  router.add("POST", "/ojs/v1/jobs", [&ctx, &configs](const HttpRequest& r) {
    auto body = with_tenant_header(parse_json_body(r), r);
    const auto timeout = block_timeout(r);
    auto push = [&](const nlohmann::json& b) { return push_waiting_for_room(ctx, r, b, timeout); };
    PushResult pushed;
    if (const auto key = r.headers.find("idempotency-key"); key != r.headers.end()) {  // ojs-bulk-operations.md §10
      const auto replayed = run_once(ctx.unique.idempotency, {"push", key->second, auth::tenant_scope()}, std::move(body),
                                     {push_ids, with_push_ids, [&](const nlohmann::json& b) { pushed = push(b); },
                                      [&ctx](const std::vector<std::string>& ids) { return ctx.views.tenant_of(ids.at(0)).has_value(); }});
      if (!replayed.empty()) return replayed_reply(201, {{"job", ctx.views.info(replayed[0])}}, "/ojs/v1/jobs/" + replayed[0]);
    } else {
      pushed = push(body);
    }
    ObjectText out;
    out.put("job", pushed.job.str());
    if (!pushed.warnings.empty()) out.put_json("warnings", pushed.warnings);  // ojs-schema-registry.md §7.3, warn mode
    // on_conflict "ignore": 200 with the existing job (spec/ojs-unique-jobs.md 5.4)
    if (pushed.deduplicated) {
      out.put_json("deduplicated", true);
      return object_reply(200, out);
    }
    auto reply = object_reply(201, out);
    reply.headers.emplace_back("Location", "/ojs/v1/jobs/" + nlohmann::json::parse(pushed.job.value_text("id")).get<std::string>());
    // A queue with a start-rate limit (its own, or the one this job's options.rate_limit
    // gave it) answers the window's room, as ojs-http-binding.md §18.1 asks of a
    // server that limits: one read of the window, only for such a queue.
    const auto queue = nlohmann::json::parse(pushed.job.value_text("queue")).get<std::string>();
    auto config = configs.cached(queue);
    if (config->rate_limit.empty() && body.contains("options") && body["options"].is_object() && body["options"].contains("rate_limit"))
      config = configs.fresh(queue);
    if (const auto rate = rate_window_state(ctx, queue, config->rate_limit)) add_rate_limit_headers(reply, *rate);
    return reply;
  }, Runs::on_io_thread);
}

void register_jobs_api(Router& router, ApiContext& ctx) {
  router.add("GET", "/ojs/v1/jobs/{id}", [&ctx](const HttpRequest& r) {
    const auto& id = r.params.at("id");
    require_in_tenant_scope(ctx, id);
    return json_reply(200, {{"job", ctx.views.info(id)}});
  });
  router.add("GET", "/ojs/v1/jobs/{id}/diagnosis", [&ctx](const HttpRequest& r) {
    require_in_tenant_scope(ctx, job_id_param(r));
    auto diagnosis = ctx.views.diagnosis(job_id_param(r));
    if (ctx.estimates) diagnosis["estimate"] = ctx.estimates->for_job(job_id_param(r));
    return json_reply(200, {{"diagnosis", diagnosis}});
  });
  router.add("DELETE", "/ojs/v1/jobs/{id}", [&ctx](const HttpRequest& r) {
    require_in_tenant_scope(ctx, job_id_param(r));
    return json_reply(200, {{"job", ctx.jobs.cancel(job_id_param(r))}});
  });
  // Cancel whose running process gets SIGKILL at once (also a cancelled job still stopping).
  router.add("POST", "/ojs/v1/jobs/{id}/kill", [&ctx](const HttpRequest& r) {
    require_in_tenant_scope(ctx, job_id_param(r));
    return json_reply(200, {{"job", ctx.jobs.cancel(job_id_param(r), true)}});
  });
}

}  // namespace ojs::broker
