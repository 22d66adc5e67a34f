// Cron (OJS level 2): POST/GET /ojs/v1/cron, GET/DELETE /ojs/v1/cron/{name}.
#include "broker/api/api.hpp"
#include "broker/api/json_io.hpp"
#include "broker/cron/cron_service.hpp"

namespace ojs::broker {

void register_cron_api(Router& router, CronService& crons) {
  router.add("POST", "/ojs/v1/cron", [&crons](const HttpRequest& r) {
    auto cron = crons.put(parse_json_body(r));
    auto reply = json_reply(201, {{"cron", cron}});
    reply.headers.emplace_back("Location", "/ojs/v1/cron/" + cron["name"].get<std::string>());
    return reply;
  });
  router.add("GET", "/ojs/v1/cron", [&crons](const HttpRequest&) { return json_reply(200, crons.list()); });
  router.add("GET", "/ojs/v1/cron/{name}", [&crons](const HttpRequest& r) {
    return json_reply(200, {{"cron", crons.get(r.params.at("name"))}});
  });
  router.add("DELETE", "/ojs/v1/cron/{name}", [&crons](const HttpRequest& r) {
    return json_reply(200, {{"cron", crons.remove(r.params.at("name"))}});
  });
}

}  // namespace ojs::broker
