// The OJS admin API extension (ojs-admin-api.md) where it differs from endpoints
// that exist elsewhere: queue listing and detail with counts, purge, job listing and
// detail, per-job and bulk retry/cancel/delete, aggregate stats and their history,
// deregistration of a stale worker. Pause/resume, workers and dead letter are
// registered by their own modules under /ojs/v1/admin too.
#include <chrono>

#include "broker/admin/bulk_actions.hpp"
#include "broker/admin/dead_letter.hpp"
#include "broker/admin/job_listing.hpp"
#include "broker/admin/stats_history.hpp"
#include "broker/admin/usage.hpp"
#include "broker/api/api.hpp"
#include "broker/api/json_io.hpp"
#include "broker/governance/queue_configs.hpp"
#include "broker/workers/liveness.hpp"
#include "ojs/core/envelope.hpp"
#include "ojs/core/error.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker {

using nlohmann::json;

namespace {

json queue_summary(ApiContext& ctx, const std::string& name) {
  const auto q = ctx.queues.state(name);
  json counts = json::object();
  for (const auto& [k, v] : q.counts) counts[k] = v;
  json out = {{"name", name}, {"state", q.paused ? "paused" : "active"}, {"paused", q.paused}, {"counts", counts},
              {"throughput", admin::throughput(ctx.admin.history, {name})}};
  if (q.paused_at) out["paused_at"] = format_rfc3339(*q.paused_at);
  return out;
}

// An RFC 3339 query parameter (nullopt when absent; 400 naming it when malformed).
std::optional<std::int64_t> time_query(const HttpRequest& r, const char* name) {
  const auto text = r.query_or(name, "");
  if (text.empty()) return std::nullopt;
  const auto ms = parse_rfc3339(text);
  if (!ms) throw invalid_field(name, "must be an RFC 3339 timestamp such as 2026-02-13T00:00:00Z");
  return ms;
}

admin::RetentionOf retention_of(ApiContext& ctx, governance::QueueConfigs& configs) {
  return [&ctx, &configs](const std::string& queue) { return admin::retention_for(configs.load(queue).retention, ctx.config); };
}

constexpr const char* kListableRule = "must be one of available, active, scheduled, retryable, dead, completed, discarded, cancelled, pending";

json page_of(const json& items, long long total, int page, int per_page) {
  return {{"items", items}, {"pagination", {{"total", total}, {"page", page}, {"per_page", per_page}}}};
}

// Queue listing and detail with counts, and the purge of finished jobs.
void register_admin_queues(Router& router, ApiContext& ctx, governance::QueueConfigs& configs) {
  router.add("GET", "/ojs/v1/admin/queues", [&ctx](const HttpRequest& r) {
    const int page = int_query(r, "page", 1, 1, 1000000);
    const int per_page = int_query(r, "per_page", 20, 1, 100);
    const auto names = ctx.queues.names();
    json items = json::array();
    for (std::size_t i = static_cast<std::size_t>(page - 1) * per_page; i < names.size() && items.size() < static_cast<std::size_t>(per_page); ++i)
      items.push_back(queue_summary(ctx, names[i]));
    return json_reply(200, page_of(items, static_cast<long long>(names.size()), page, per_page));
  });
  router.add("GET", "/ojs/v1/admin/queues/{name}", [&ctx, &configs](const HttpRequest& r) {
    const auto name = queue_name_param(r);
    ctx.queues.require(name);
    json out = queue_summary(ctx, name);
    out["configuration"] = governance::admin_configuration(configs.load(name), name);
    return json_reply(200, out);
  });
  // §6.5: finished jobs only (completed, discarded, cancelled); waiting or running jobs
  // are cancelled first (bulk cancel), so a purge never races a worker.
  router.add("DELETE", "/ojs/v1/admin/queues/{name}/jobs", [&ctx](const HttpRequest& r) {
    const auto name = queue_name_param(r);
    ctx.queues.require(name);
    const auto body = parse_json_body(r);
    if (!body.is_object()) throw invalid_field("$", "request body must be a JSON object");
    if (!body.contains("confirm") || body["confirm"] != true) throw invalid_field("confirm", "must be true (a purge cannot be undone)");
    if (!body.contains("states") || !body["states"].is_array() || body["states"].empty())
      throw invalid_field("states", "is required: a non-empty array of completed, discarded, cancelled");
    std::vector<std::string> states;
    for (const auto& s : body["states"]) {
      if (!s.is_string() || !admin::is_finished_state(s.get<std::string>()))
        throw invalid_field("states", "only finished jobs can be purged: completed, discarded, cancelled (cancel waiting jobs first)");
      states.push_back(s.get<std::string>());
    }
    std::int64_t before = now_ms() + 1;
    if (body.contains("older_than")) {
      const auto ms = body["older_than"].is_string() ? parse_rfc3339(body["older_than"].get<std::string>()) : std::nullopt;
      if (!ms) throw invalid_field("older_than", "must be an RFC 3339 timestamp such as 2026-02-06T00:00:00Z");
      before = *ms;
    }
    return json_reply(200, {{"purged_count", admin::purge_finished(ctx.admin.dead_letter, name, states, before)}, {"states", states}});
  });
}

// Job listing and detail, per-job and bulk retry, cancel and delete.
void register_admin_jobs(Router& router, ApiContext& ctx, governance::QueueConfigs& configs) {
  // ojs-admin-api.md §7.1: jobs by state, across queues or in one, with their real total.
  router.add("GET", "/ojs/v1/admin/jobs", [&ctx, &configs](const HttpRequest& r) {
    admin::JobQuery q;
    q.state = r.query_or("state", "available");
    if (!admin::is_listable_state(q.state)) throw invalid_field("state", kListableRule);
    const auto only = r.query_or("queue", "");
    if (!only.empty() && !is_valid_queue_name(only)) throw invalid_field("queue", "must match ^[a-z0-9][a-z0-9.-]*$");
    q.queues = only.empty() ? ctx.queues.names() : std::vector<std::string>{only};
    q.type = r.query_or("type", "");
    q.since_ms = time_query(r, "since");
    q.until_ms = time_query(r, "until");
    q.page = int_query(r, "page", 1, 1, 1000);
    q.per_page = int_query(r, "per_page", 20, 1, 100);
    return json_reply(200, admin::list_jobs_page(ctx.admin.listing, q, retention_of(ctx, configs)));
  });
  // Bulk before {id}: "bulk" would otherwise be read as a job id.
  router.add("POST", "/ojs/v1/admin/jobs/bulk/{action}", [&ctx](const HttpRequest& r) {
    const auto request = admin::parse_bulk_request(r.params.at("action"), parse_json_body(r));
    return json_reply(200, admin::run_bulk(ctx.admin.bulk, request));
  });
  // §7.2: the job itself (it was {job: {...}} before). `errors` and `meta` are
  // always there, empty when the job has none: the admin dashboard's job page reads
  // errors.length and meta's keys of any job, a waiting one included.
  router.add("GET", "/ojs/v1/admin/jobs/{id}", [&ctx](const HttpRequest& r) {
    auto job = ctx.views.info(r.params.at("id"));
    if (!job.contains("errors") || !job["errors"].is_array()) job["errors"] = json::array();
    if (!job.contains("meta") || !job["meta"].is_object()) job["meta"] = json::object();
    return json_reply(200, job);
  });
  router.add("POST", "/ojs/v1/admin/jobs/{id}/cancel", [&ctx](const HttpRequest& r) {
    return json_reply(200, {{"job", ctx.jobs.cancel(r.params.at("id"))}});
  });
  router.add("POST", "/ojs/v1/admin/jobs/{id}/retry", [&ctx](const HttpRequest& r) {
    return json_reply(200, {{"job", admin::retry_job(ctx.admin.dead_letter, r.params.at("id"))}});
  });
}

// Aggregate stats, their history and the resource-seconds used.
void register_admin_stats(Router& router, ApiContext& ctx) {
  // §10.1; jobs.delayed and jobs.dead_letter (the earlier names) stay beside scheduled and retryable for one release.
  router.add("GET", "/ojs/v1/admin/stats", [&ctx](const HttpRequest&) {
    const auto queues = ctx.queues.names();
    json jobs = json::object();  // every count there, zero without queues
    for (const char* state : {"available", "active", "scheduled", "retryable", "pending", "dead_letter", "completed", "discarded", "cancelled", "delayed"})
      jobs[state] = 0LL;
    for (const auto& q : queues)
      for (const auto& [k, v] : ctx.queues.state(q).counts) jobs[k] = jobs.value(k, 0LL) + v;
    const auto uptime = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - ctx.started_at).count();
    return json_reply(200, {{"queues", queues.size()}, {"workers", ctx.workers.list().size()}, {"jobs", jobs},
                            {"throughput", admin::throughput(ctx.admin.history, queues)}, {"uptime_seconds", uptime}});
  });
  // §10.2: from the per-minute rollup, a day of it kept.
  router.add("GET", "/ojs/v1/admin/stats/history", [&ctx](const HttpRequest& r) {
    const auto period = r.query_or("period", "5m");
    if (!admin::period_minutes(period)) throw invalid_field("period", "must be one of 1m, 5m, 1h, 1d");
    const auto only = r.query_or("queue", "");
    if (!only.empty() && !is_valid_queue_name(only)) throw invalid_field("queue", "must match ^[a-z0-9][a-z0-9.-]*$");
    const auto now = now_ms();
    const auto until = time_query(r, "until").value_or(now);
    const auto since = time_query(r, "since").value_or(until - 3600 * 1000);
    if (since > until) throw invalid_field("since", "must not be after until");
    const auto queues = only.empty() ? ctx.queues.names() : std::vector<std::string>{only};
    return json_reply(200, admin::stats_history(ctx.admin.history, queues, period, since, until));
  });

  // Resource-seconds from the per-hour rollup: from/to RFC 3339
  // (default: the last 24 hours), by tenant | queue | type | worker, queue to narrow.
  router.add("GET", "/ojs/v1/admin/usage", [&ctx](const HttpRequest& r) {
    const auto by = r.query_or("by", "tenant");
    if (!admin::is_usage_grouping(by)) throw invalid_field("by", admin::kUsageGroupingRule);
    const auto only = r.query_or("queue", "");
    if (!only.empty() && !is_valid_queue_name(only)) throw invalid_field("queue", "must match ^[a-z0-9][a-z0-9.-]*$");
    const auto to = time_query(r, "to").value_or(now_ms());
    const auto from = time_query(r, "from").value_or(to - 24 * 3600 * 1000LL);
    if (from > to) throw invalid_field("from", "must not be after to");
    const auto queues = only.empty() ? ctx.queues.names() : std::vector<std::string>{only};
    return json_reply(200, admin::usage_report(ctx.admin.usage, queues, by, from, to));
  });
}

}  // namespace

void register_admin_api(Router& router, ApiContext& ctx, governance::QueueConfigs& configs) {
  register_admin_queues(router, ctx, configs);
  register_admin_jobs(router, ctx, configs);
  register_admin_stats(router, ctx);
  // ojs-admin-api.md §9.4: only a worker past its heartbeat deadline; its jobs are
  // reclaimed (available again) before it is forgotten.
  router.add("DELETE", "/ojs/v1/admin/workers/{id}", [&ctx](const HttpRequest& r) {
    const auto& id = r.params.at("id");
    const auto worker = ctx.workers.get(id);
    if (!worker) throw OjsError(ErrorCode::not_found, "worker " + id + " not found", {{"worker_id", id}});
    const auto now = now_ms();
    const auto silent_since = now - ctx.config.worker_dead_after_ms;
    if (!worker_lost(*worker, now, ctx.config.worker_dead_after_ms))
      throw OjsError(ErrorCode::conflict, "worker " + id + " is still in contact; quiet or terminate it first",
                     {{"worker_id", id}, {"last_seen", format_rfc3339(worker->last_seen_ms)}});
    int reclaimed = 0;
    for (const auto& queue : ctx.queues.names()) reclaimed += ctx.reaper.reclaim_from_lost_workers(queue, {id});
    if (!ctx.workers.forget(id, silent_since))
      throw OjsError(ErrorCode::conflict, "worker " + id + " still holds jobs or made contact; retry", {{"worker_id", id}});
    return json_reply(200, {{"deleted", true}, {"worker_id", id}, {"jobs_reclaimed", reclaimed}});
  });
}

}  // namespace ojs::broker
