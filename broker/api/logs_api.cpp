// Job logs: POST /ojs/v1/workers/logs (the worker agent's chunks of a
// job's stdout/stderr) and GET /ojs/v1/jobs/{id}/logs (?tail=N lines, ?since=cursor
// or time, ?follow=true: server-sent events until the job ends), tenant-scoped like INFO.
#include "broker/api/api.hpp"
#include "broker/api/job_scope.hpp"
#include "broker/api/json_io.hpp"
#include "broker/auth/identity.hpp"
#include "broker/logs/log_service.hpp"
#include "ojs/core/envelope.hpp"
#include "ojs/core/error.hpp"

namespace ojs::broker {

void register_logs_api(Router& router, ApiContext& ctx, LogService& logs) {
  router.add("POST", "/ojs/v1/workers/logs", [&logs](const HttpRequest& r) {
    const auto body = parse_json_body(r);
    // A malformed worker_id is the request's fault (400), before whose it may be (403).
    auth::authorize_worker_id(body.is_object() && body.contains("worker_id") ? require_worker_id(body["worker_id"], "worker_id")
                                                                               : std::string());
    return json_reply(200, logs.append(body));
  });
  router.add("GET", "/ojs/v1/jobs/{id}/logs", [&ctx, &logs](const HttpRequest& r) {
    const auto& id = job_id_param(r);
    require_in_tenant_scope(ctx, id);
    const auto follow = r.query_or("follow", "");
    if (!follow.empty() && follow != "true" && follow != "false" && follow != "1" && follow != "0")
      throw invalid_field("follow", "must be true or false");
    // EventSource sends Last-Event-ID on reconnection: it is the cursor to go on from.
    auto query = LogService::parse_query(r.query_or("tail", ""), r.query_or("since", ""));
    if (const auto last = r.header("last-event-id"); !last.empty()) {
      try {
        query.after = LogService::parse_query("", last).after;
      } catch (const OjsError&) {
        throw invalid_field("Last-Event-ID", "must be a log event's id (<ms>-<seq>)");
      }
    }
    if (follow != "true" && follow != "1") return json_reply(200, logs.read(id, query));
    HttpResponse response;
    response.content_type = "text/event-stream";
    response.headers = {{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}};
    response.stream = logs.follow(id, query);
    return response;
  });
}

}  // namespace ojs::broker
