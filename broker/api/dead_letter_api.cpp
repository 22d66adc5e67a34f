// Dead letter: GET /ojs/v1/dead-letter, POST /ojs/v1/dead-letter/{id}/retry,
// DELETE /ojs/v1/dead-letter/{id}, and the same under /ojs/v1/admin/dead-letter, with
// GET .../stats and POST .../retry (every job, or a queue's) there. Jobs land here when
// their retry policy says on_exhaustion=dead_letter.
#include "broker/admin/dead_letter.hpp"
#include "broker/api/api.hpp"
#include "broker/api/json_io.hpp"
#include "ojs/core/envelope.hpp"
#include "ojs/core/error.hpp"

namespace ojs::broker {

namespace {
std::string queue_query(const HttpRequest& r) {
  const auto only = r.query_or("queue", "");
  if (!only.empty() && !is_valid_queue_name(only)) throw invalid_field("queue", "must match ^[a-z0-9][a-z0-9.-]*$");
  return only;
}
}  // namespace

void register_dead_letter_api(Router& router, ApiContext& ctx) {
  // Stats and the bulk retry before {id}: "stats" and "retry" would otherwise be read as ids.
  router.add("GET", "/ojs/v1/admin/dead-letter/stats", [&ctx](const HttpRequest&) {
    return json_reply(200, admin::dead_letter_stats(ctx.admin.dead_letter));
  });
  // OpenAPI adminBulkRetryDeadLetter: every dead-letter job, or those of {"queue"}; {"limit"} at most (default 1000).
  router.add("POST", "/ojs/v1/admin/dead-letter/retry", [&ctx](const HttpRequest& r) {
    const auto body = r.body.empty() ? nlohmann::json::object() : parse_json_body(r);
    if (!body.is_object()) throw invalid_field("$", "request body must be a JSON object");
    std::string only;
    if (body.contains("queue")) {
      if (!body["queue"].is_string() || !is_valid_queue_name(body["queue"].get<std::string>()))
        throw invalid_field("queue", "must match ^[a-z0-9][a-z0-9.-]*$");
      only = body["queue"].get<std::string>();
    }
    int limit = 1000;
    if (body.contains("limit")) {
      if (!body["limit"].is_number_integer() || body["limit"].get<long long>() < 1 || body["limit"].get<long long>() > 10000)
        throw invalid_field("limit", "must be an integer between 1 and 10000");
      limit = body["limit"].get<int>();
    }
    return json_reply(200, admin::retry_all_dead(ctx.admin.dead_letter, only, limit));
  });
  // The same endpoints under /ojs/v1/admin (ojs-admin-api.md §11).
  for (const std::string base : {"/ojs/v1/dead-letter", "/ojs/v1/admin/dead-letter"}) {
    // limit/offset (the OpenAPI's), or page/per_page (ojs-admin-api.md §11.1, as the job
    // listing): then {items, pagination{total, page, per_page}} beside `jobs`.
    router.add("GET", base, [&ctx](const HttpRequest& r) {
      const auto only = queue_query(r);
      if (r.query_or("page", "").empty() && r.query_or("per_page", "").empty()) {
        const int limit = int_query(r, "limit", 50, 1, 1000);
        const int offset = int_query(r, "offset", 0, 0, 1000000);
        auto out = admin::dead_letter_page(ctx.admin.dead_letter, only, offset, limit);
        out["items"] = out["jobs"];
        // The page the offset falls in, for the clients that page (ext-dead-letter reads pagination.page).
        out["pagination"]["page"] = offset / limit + 1;
        out["pagination"]["per_page"] = limit;
        return json_reply(200, out);
      }
      const int page = int_query(r, "page", 1, 1, 1000000);
      const int per_page = int_query(r, "per_page", 20, 1, 100);
      auto out = admin::dead_letter_page(ctx.admin.dead_letter, only, (page - 1) * per_page, per_page);
      const auto total = out["pagination"]["total"];
      out["items"] = out["jobs"];
      out["pagination"] = {{"total", total}, {"page", page}, {"per_page", per_page}};
      return json_reply(200, out);
    });
    router.add("POST", base + "/{id}/retry", [&ctx](const HttpRequest& r) {
      return json_reply(200, {{"job", admin::retry_dead(ctx.admin.dead_letter, r.params.at("id"))}});
    });
    // The OpenAPI: {deleted, job_id} at /ojs/v1/dead-letter/{id}, a bare 204 under /admin.
    const bool bare = base.starts_with("/ojs/v1/admin/");
    router.add("DELETE", base + "/{id}", [&ctx, bare](const HttpRequest& r) {
      const auto& id = r.params.at("id");
      admin::discard_dead(ctx.admin.dead_letter, id);
      if (bare) return json_response(204, "");
      return json_reply(200, {{"deleted", true}, {"job_id", id}});
    });
  }
}

}  // namespace ojs::broker
