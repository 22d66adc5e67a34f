// Cron (OJS level 2): POST/GET /ojs/v1/cron (and GET /ojs/v1/crons), GET/DELETE /ojs/v1/cron/{name}.
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
  // ojs-cron.md §8.2 answers {cron_jobs, count}; `crons` (ours before issue 28) is kept
  // alongside for one release. GET /ojs/v1/crons is the official dashboard's name for it
  // (no spec document defines it).
  for (const std::string path : {"/ojs/v1/cron", "/ojs/v1/crons"})
    router.add("GET", path, [&crons](const HttpRequest&) {
      auto out = crons.list(auth::tenant_scope());
      out["cron_jobs"] = out["crons"];
      out["count"] = out["crons"].size();
      return json_reply(200, out);
    });
  router.add("GET", "/ojs/v1/cron/{name}", [&crons](const HttpRequest& r) {
    auto cron = crons.get(r.params.at("name"), auth::tenant_scope());
    return json_reply(200, {{"cron_job", cron}, {"cron", cron}});
  });
  router.add("DELETE", "/ojs/v1/cron/{name}", [&crons](const HttpRequest& r) {
    return json_reply(200, {{"cron", crons.remove(r.params.at("name"), auth::tenant_scope())}});
  });
}

}  // namespace ojs::broker
