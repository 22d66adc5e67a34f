// Job events, two ways over the same filters:
//   GET /ojs/v1/events?types=a,b&queues=x,y&job_types=t&job_id=...&limit=N   (polling, newest first)
//   GET /ojs/v1/events/stream?<the same filters>                              (server-sent events, live)
//   GET /ojs/v1/queues/{name}/events, GET /ojs/v1/jobs/{id}/events             (the same, for one queue / one job)
// A tenant-pinned token sees only events of its tenant's jobs, on both.
#include "ojs/core/job_states.hpp"
#include "broker/api/api.hpp"
#include "broker/api/job_scope.hpp"
#include "broker/api/json_io.hpp"
#include "broker/auth/identity.hpp"
#include "broker/events/event_hub.hpp"
#include "broker/events/event_log.hpp"
#include "ojs/core/error.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker {

namespace {

std::set<std::string> csv_set(const std::string& s) {
  std::set<std::string> out;
  std::size_t start = 0;
  while (start < s.size()) {
    auto comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    if (comma > start) out.insert(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

// `event_types` is the realtime spec's name for `types`, `queue` / `job_type` the singular forms.
EventFilter filter_of(const HttpRequest& r) {
  EventFilter f;
  f.types = csv_set(r.query_or("types", r.query_or("event_types", "")));
  f.queues = csv_set(r.query_or("queues", r.query_or("queue", "")));
  f.job_types = csv_set(r.query_or("job_types", r.query_or("job_type", "")));
  f.job_id = r.query_or("job_id", "");
  return f;
}

void require_events_on(const ApiContext& ctx) {
  if (ctx.config.events == "off")
    throw OjsError(ErrorCode::unsupported, "job events are turned off on this broker (--events off): nothing is recorded to read",
                   {{"field", "events"}, {"rule", "needs a broker started with --events bounded (the default)"}});
}

// EventSource sends Last-Event-ID on reconnection; `last_event_id` serves clients that cannot set headers.
std::string last_event_id(const HttpRequest& r) {
  auto last = r.header("last-event-id");
  return last.empty() ? r.query_or("last_event_id", "") : last;
}

HttpResponse sse_response(std::shared_ptr<EventSubscription> sub) {
  HttpResponse response;
  response.content_type = "text/event-stream";
  response.headers = {{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}};
  response.stream = std::move(sub);
  return response;
}

}  // namespace

void register_events_api(Router& router, ApiContext& ctx, EventLog& events, EventHub& hub) {
  router.add("GET", "/ojs/v1/events", [&ctx, &events](const HttpRequest& r) {
    require_events_on(ctx);
    const auto filter = filter_of(r);
    const int limit = int_query(r, "limit", 100, 1, 1000);
    const auto queues = filter.queues.empty() ? ctx.queues.names() : std::vector<std::string>(filter.queues.begin(), filter.queues.end());
    // Bounded: at most kEventScanBudget entries read, whatever the queues and filters;
    // the tenant of a pinned token is in each entry (no read of the job).
    std::vector<nlohmann::json> found;
    const auto scan = events.newest(queues, filter, auth::tenant_scope(), limit, found);
    nlohmann::json out = nlohmann::json::array();
    for (auto& e : found) {
      e["timestamp"] = e["time"];  // the official dashboard's name for it
      out.push_back(std::move(e));
    }
    // `items`/`pagination` for the official dashboard (no spec document defines this
    // list), beside `events`.
    const auto n = out.size();
    nlohmann::json body = {{"events", out}, {"items", out}, {"pagination", {{"total", n}, {"page", 1}, {"per_page", limit}}}};
    if (!scan.complete) body["truncated"] = true;  // the scan budget ran out first: narrow the filters (queues, job_id)
    return json_reply(200, body);
  });

  router.add("GET", "/ojs/v1/events/stream", [&ctx, &hub](const HttpRequest& r) {
    require_events_on(ctx);
    return sse_response(hub.subscribe(filter_of(r), auth::tenant_scope(), last_event_id(r)));
  });

  // spec/ojs-realtime.md 2.2: one queue's events (404 for an unknown queue).
  router.add("GET", "/ojs/v1/queues/{name}/events", [&ctx, &hub](const HttpRequest& r) {
    require_events_on(ctx);
    const auto queue = queue_name_param(r);
    ctx.queues.require(queue);
    auto filter = filter_of(r);
    filter.queues = {queue};
    return sse_response(hub.subscribe(std::move(filter), auth::tenant_scope(), last_event_id(r)));
  });

  // spec/ojs-realtime.md 2.1: one job's events until its terminal one; a job
  // already finished gets one job.state_changed with its state, and the end.
  router.add("GET", "/ojs/v1/jobs/{id}/events", [&ctx, &hub](const HttpRequest& r) {
    require_events_on(ctx);
    const auto& id = job_id_param(r);
    require_in_tenant_scope(ctx, id);
    auto filter = filter_of(r);
    filter.job_id = id;
    auto sub = hub.subscribe(std::move(filter), auth::tenant_scope(), last_event_id(r), true);
    // Read after subscribing: a transition in between is either in the stream or in this state.
    nlohmann::json job;
    try {
      job = ctx.views.info(id);
    } catch (...) {
      sub->abandon();
      throw;
    }
    const auto state = job.value("state", "");
    if (is_finished(state)) {
      const nlohmann::json changed = {{"job_id", id}, {"queue", job.value("queue", "")}, {"type", job.value("type", "")},
                                      {"to", state}, {"timestamp", format_rfc3339(now_ms())}};
      sub->finish(sse_frame("", "job.state_changed", changed.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
    }
    return sse_response(std::move(sub));
  });
}

}  // namespace ojs::broker
