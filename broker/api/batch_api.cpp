// Batch PUSH: POST /ojs/v1/jobs/batch (OJS HTTP binding section 7.2).
#include "broker/api/api.hpp"
#include "broker/api/json_io.hpp"
#include "broker/api/tenant_header.hpp"
#include "broker/auth/identity.hpp"
#include "broker/jobs/batch_push.hpp"
#include "broker/uniqueness/idempotent_push.hpp"

#include <algorithm>

namespace ojs::broker {

void register_batch_api(Router& router, ApiContext& ctx) {
  router.add("POST", "/ojs/v1/jobs/batch", [&ctx](const HttpRequest& r) {
    auto body = with_tenant_header_on_batch(parse_json_body(r), r);
    const auto key = r.headers.find("idempotency-key");
    if (key == r.headers.end()) return json_reply(201, push_batch(ctx.batch, body, ctx.config.max_queues));
    // ojs-bulk-operations.md §10: a retry gets the jobs the first request stored.
    nlohmann::json stored;
    const auto replayed = run_once(
        ctx.unique.idempotency, {"push_batch", key->second, auth::tenant_scope()}, std::move(body),
        {batch_ids, with_batch_ids, [&](const nlohmann::json& b) { stored = push_batch(ctx.batch, b, ctx.config.max_queues); },
         [&ctx](const std::vector<std::string>& ids) {
           return std::all_of(ids.begin(), ids.end(), [&ctx](const std::string& id) { return ctx.views.tenant_of(id).has_value(); });
         }});
    if (replayed.empty()) return json_reply(201, stored);
    nlohmann::json jobs = nlohmann::json::array();
    for (const auto& id : replayed) jobs.push_back(ctx.views.info(id));
    return replayed_reply(201, {{"jobs", jobs}, {"count", jobs.size()}}, "");
  });
}

}  // namespace ojs::broker
