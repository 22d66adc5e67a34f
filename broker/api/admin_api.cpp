// The OJS admin API extension (ojs-admin-api.md) where it differs from endpoints
// that exist elsewhere: queue listing and detail with counts, job listing and
// detail, per-job and bulk retry/cancel/delete, aggregate stats, deregistration
// of a stale worker. Pause/resume and dead letter are registered by their own
// modules under /ojs/v1/admin too.
#include <chrono>

#include "broker/admin/bulk_actions.hpp"
#include "broker/admin/dead_letter.hpp"
#include "broker/admin/job_listing.hpp"
#include "broker/api/api.hpp"
#include "broker/api/json_io.hpp"
#include "broker/governance/queue_configs.hpp"
#include "ojs/core/envelope.hpp"
#include "ojs/core/error.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker {

using nlohmann::json;

namespace {

json queue_summary(QueueService& queues, const std::string& name) {
  const auto q = queues.state(name);
  json counts = json::object();
  for (const auto& [k, v] : q.counts) counts[k] = v;
  return {{"name", name}, {"state", q.paused ? "paused" : "active"}, {"paused", q.paused}, {"counts", counts}};
}

json page_of(const json& items, long long total, int page, int per_page) {
  return {{"items", items}, {"pagination", {{"total", total}, {"page", page}, {"per_page", per_page}}}};
}

}  // namespace

void register_admin_api(Router& router, ApiContext& ctx, governance::QueueConfigs& configs) {
  router.add("GET", "/ojs/v1/admin/queues", [&ctx](const HttpRequest& r) {
    const int page = int_query(r, "page", 1, 1, 1000000);
    const int per_page = int_query(r, "per_page", 20, 1, 100);
    const auto names = ctx.queues.names();
    json items = json::array();
    for (std::size_t i = static_cast<std::size_t>(page - 1) * per_page; i < names.size() && items.size() < static_cast<std::size_t>(per_page); ++i)
      items.push_back(queue_summary(ctx.queues, names[i]));
    return json_reply(200, page_of(items, static_cast<long long>(names.size()), page, per_page));
  });
  router.add("GET", "/ojs/v1/admin/queues/{name}", [&ctx, &configs](const HttpRequest& r) {
    const auto name = queue_name_param(r);
    ctx.queues.require(name);
    json out = queue_summary(ctx.queues, name);
    out["configuration"] = governance::to_json(configs.load(name), name);
    return json_reply(200, out);
  });

  // Jobs by state, across queues or in one; only indexed states can be listed.
  router.add("GET", "/ojs/v1/admin/jobs", [&ctx](const HttpRequest& r) {
    const auto state = r.query_or("state", "available");
    if (!admin::is_listable_state(state)) throw invalid_field("state", "must be one of available, active, scheduled, retryable, dead");
    const auto only = r.query_or("queue", "");
    if (!only.empty() && !is_valid_queue_name(only)) throw invalid_field("queue", "must match ^[a-z0-9][a-z0-9.-]*$");
    const auto type = r.query_or("type", "");
    const int page = int_query(r, "page", 1, 1, 1000);
    const int per_page = int_query(r, "per_page", 20, 1, 100);
    const int wanted = page * per_page;
    json matched = json::array();
    for (const auto& queue : only.empty() ? ctx.queues.names() : std::vector<std::string>{only}) {
      json listed = admin::list_jobs(ctx.jobs, queue, state, wanted);
      for (auto& job : listed["jobs"]) {
        const auto t = job.value("type", "");
        const bool type_ok = type.empty() || (type.back() == '*' ? t.rfind(type.substr(0, type.size() - 1), 0) == 0 : t == type);
        if (!type_ok) continue;
        job["queue"] = queue;
        matched.push_back(std::move(job));
      }
    }
    json items = json::array();
    for (std::size_t i = static_cast<std::size_t>(page - 1) * per_page; i < matched.size() && items.size() < static_cast<std::size_t>(per_page); ++i)
      items.push_back(matched[i]);
    return json_reply(200, page_of(items, static_cast<long long>(matched.size()), page, per_page));
  });
  // Bulk before {id}: "bulk" would otherwise be read as a job id.
  router.add("POST", "/ojs/v1/admin/jobs/bulk/{action}", [&ctx](const HttpRequest& r) {
    const auto request = admin::parse_bulk_request(r.params.at("action"), parse_json_body(r));
    return json_reply(200, admin::run_bulk(ctx.jobs, request));
  });
  router.add("GET", "/ojs/v1/admin/jobs/{id}", [&ctx](const HttpRequest& r) {
    return json_reply(200, {{"job", ctx.jobs.info(r.params.at("id"))}});
  });
  router.add("POST", "/ojs/v1/admin/jobs/{id}/cancel", [&ctx](const HttpRequest& r) {
    return json_reply(200, {{"job", ctx.jobs.cancel(r.params.at("id"))}});
  });
  router.add("POST", "/ojs/v1/admin/jobs/{id}/retry", [&ctx](const HttpRequest& r) {
    return json_reply(200, {{"job", admin::retry_job(ctx.jobs, r.params.at("id"))}});
  });

  router.add("GET", "/ojs/v1/admin/stats", [&ctx](const HttpRequest&) {
    const auto queues = ctx.queues.names();
    json jobs = json::object();
    for (const auto& q : queues)
      for (const auto& [k, v] : ctx.queues.state(q).counts) jobs[k] = jobs.value(k, 0LL) + v;
    const auto uptime = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - ctx.started_at).count();
    return json_reply(200, {{"queues", queues.size()}, {"workers", ctx.workers.list().size()}, {"jobs", jobs}, {"uptime_seconds", uptime}});
  });

  // ojs-admin-api.md §9.4: only a worker past its heartbeat deadline; its jobs are
  // reclaimed (available again) before it is forgotten.
  router.add("DELETE", "/ojs/v1/admin/workers/{id}", [&ctx](const HttpRequest& r) {
    const auto& id = r.params.at("id");
    const auto worker = ctx.workers.get(id);
    if (!worker) throw OjsError(ErrorCode::not_found, "worker " + id + " not found", {{"worker_id", id}});
    const auto silent_since = now_ms() - ctx.config.worker_dead_after_ms;
    if (worker->last_seen_ms > silent_since)
      throw OjsError(ErrorCode::conflict, "worker " + id + " is still in contact; quiet or terminate it first",
                     {{"worker_id", id}, {"last_seen", format_rfc3339(worker->last_seen_ms)}});
    int reclaimed = 0;
    for (const auto& queue : ctx.queues.names()) reclaimed += ctx.jobs.reclaim_from_lost_workers(queue, {id});
    if (!ctx.workers.forget(id, silent_since))
      throw OjsError(ErrorCode::conflict, "worker " + id + " still holds jobs or made contact; retry", {{"worker_id", id}});
    return json_reply(200, {{"deleted", true}, {"worker_id", id}, {"jobs_reclaimed", reclaimed}});
  });
}

}  // namespace ojs::broker
