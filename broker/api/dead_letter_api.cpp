// Dead letter: GET /ojs/v1/dead-letter, POST /ojs/v1/dead-letter/{id}/retry,
// DELETE /ojs/v1/dead-letter/{id}, and the same under /ojs/v1/admin/dead-letter. Jobs land here when their retry policy says
// on_exhaustion=dead_letter.
#include "broker/admin/dead_letter.hpp"
#include "broker/api/api.hpp"
#include "broker/api/json_io.hpp"
#include "ojs/core/envelope.hpp"
#include "ojs/core/error.hpp"

namespace ojs::broker {

void register_dead_letter_api(Router& router, ApiContext& ctx) {
  // The same endpoints under /ojs/v1/admin (ojs-admin-api.md §11).
  for (const std::string base : {"/ojs/v1/dead-letter", "/ojs/v1/admin/dead-letter"}) {
    router.add("GET", base, [&ctx](const HttpRequest& r) {
      const int limit = int_query(r, "limit", 50, 1, 1000);
      const int offset = int_query(r, "offset", 0, 0, 1000000);
      const auto only = r.query_or("queue", "");
      if (!only.empty() && !is_valid_queue_name(only)) throw invalid_field("queue", "must match ^[a-z0-9][a-z0-9.-]*$");
      return json_reply(200, admin::dead_letter_page(ctx.jobs, only, offset, limit));
    });
    router.add("POST", base + "/{id}/retry", [&ctx](const HttpRequest& r) {
      return json_reply(200, {{"job", admin::retry_dead(ctx.jobs, r.params.at("id"))}});
    });
    router.add("DELETE", base + "/{id}", [&ctx](const HttpRequest& r) {
      const auto& id = r.params.at("id");
      admin::discard_dead(ctx.jobs, id);
      return json_reply(200, {{"deleted", true}, {"job_id", id}});
    });
  }
}

}  // namespace ojs::broker
