// Cron (OJS level 2): POST/GET /ojs/v1/cron, GET/DELETE /ojs/v1/cron/{name}.
// A tenant-pinned token sees and changes only its tenant's crons (as for jobs).
#include "broker/api/api.hpp"
#include "broker/api/json_io.hpp"
#include "broker/auth/identity.hpp"
#include "broker/cron/cron_service.hpp"

namespace ojs::broker {

namespace {
std::string caller_name() {
  const auto* who = auth::current_identity();
  return who ? who->name : std::string();
}
}  // namespace

void register_cron_api(Router& router, CronService& crons) {
  router.add("POST", "/ojs/v1/cron", [&crons](const HttpRequest& r) {
    auto cron = crons.put(parse_json_body(r), auth::tenant_scope(), caller_name());
    auto reply = json_reply(201, {{"cron", cron}});
    reply.headers.emplace_back("Location", "/ojs/v1/cron/" + cron["name"].get<std::string>());
    return reply;
  });
  router.add("GET", "/ojs/v1/cron", [&crons](const HttpRequest&) { return json_reply(200, crons.list(auth::tenant_scope())); });
  router.add("GET", "/ojs/v1/cron/{name}", [&crons](const HttpRequest& r) {
    return json_reply(200, {{"cron", crons.get(r.params.at("name"), auth::tenant_scope())}});
  });
  router.add("DELETE", "/ojs/v1/cron/{name}", [&crons](const HttpRequest& r) {
    return json_reply(200, {{"cron", crons.remove(r.params.at("name"), auth::tenant_scope())}});
  });
}

}  // namespace ojs::broker
