// Dead letter: GET /ojs/v1/dead-letter, POST /ojs/v1/dead-letter/{id}/retry,
// DELETE /ojs/v1/dead-letter/{id}, and the same under /ojs/v1/admin/dead-letter. Jobs land here when their retry policy says
// on_exhaustion=dead_letter.
#include "broker/api/api.hpp"
#include "broker/api/json_io.hpp"
#include "ojs/core/envelope.hpp"
#include "ojs/core/error.hpp"

namespace ojs::broker {

namespace {

Transition act(ApiContext& ctx, const std::string& id, const std::string& action) {
  auto queue = ctx.store.queue_of(id);
  if (!queue) throw OjsError(ErrorCode::not_found, "job " + id + " not found", {{"job_id", id}});
  auto t = ctx.store.dead_letter_action(*queue, id, action);
  if (t.status == TransitionStatus::not_found)
    throw OjsError(ErrorCode::not_found, "job " + id + " is not in the dead letter queue", {{"job_id", id}});
  return t;
}

}  // namespace

void register_dead_letter_api(Router& router, ApiContext& ctx) {
  // The same endpoints under /ojs/v1/admin (ojs-admin-api.md §11).
  for (const std::string base : {"/ojs/v1/dead-letter", "/ojs/v1/admin/dead-letter"}) {
    router.add("GET", base, [&ctx](const HttpRequest& r) {
      const int limit = int_query(r, "limit", 50, 1, 1000);
      const int offset = int_query(r, "offset", 0, 0, 1000000);
      const auto only = r.query_or("queue", "");
      if (!only.empty() && !is_valid_queue_name(only)) throw invalid_field("queue", "must match ^[a-z0-9][a-z0-9.-]*$");
      nlohmann::json jobs = nlohmann::json::array();
      long long total = 0;
      int skipped = 0;
      for (const auto& queue : only.empty() ? ctx.store.queues() : std::vector<std::string>{only}) {
        total += ctx.store.dead_letter_size(queue);
        for (const auto& record : ctx.store.dead_letter(queue, 0, offset + limit)) {
          if (skipped < offset) {
            ++skipped;
            continue;
          }
          if (static_cast<int>(jobs.size()) < limit) jobs.push_back(record.envelope());
        }
      }
      return json_reply(200, {{"jobs", jobs}, {"pagination", {{"total", total}, {"limit", limit}, {"offset", offset}}}});
    });
    router.add("POST", base + "/{id}/retry", [&ctx](const HttpRequest& r) {
      return json_reply(200, {{"job", act(ctx, r.params.at("id"), "retry").job.envelope()}});
    });
    router.add("DELETE", base + "/{id}", [&ctx](const HttpRequest& r) {
      const auto& id = r.params.at("id");
      act(ctx, id, "discard");
      ctx.store.forget(id);
      return json_reply(200, {{"deleted", true}, {"job_id", id}});
    });
  }
}

}  // namespace ojs::broker
