// Batch PUSH: POST /ojs/v1/jobs/batch (OJS HTTP binding section 7.2).
#include "broker/api/api.hpp"
#include "broker/api/json_io.hpp"
#include "broker/api/tenant_header.hpp"
#include "broker/jobs/batch_push.hpp"

namespace ojs::broker {

void register_batch_api(Router& router, ApiContext& ctx) {
  router.add("POST", "/ojs/v1/jobs/batch", [&ctx](const HttpRequest& r) {
    return json_reply(201, push_batch(ctx.batch, with_tenant_header_on_batch(parse_json_body(r), r), ctx.config.max_queues));
  });
}

}  // namespace ojs::broker
