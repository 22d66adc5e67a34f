// Cron (OJS level 2): POST/GET /ojs/v1/cron (and GET /ojs/v1/crons), GET/DELETE /ojs/v1/cron/{name}.
// A tenant-pinned token sees and changes only its tenant's crons (as for jobs).
#include "broker/api/api.hpp"
#include "broker/api/json_io.hpp"
#include "broker/auth/identity.hpp"
#include "broker/cron/cron_service.hpp"

namespace ojs::broker {

void register_cron_api(Router& router, CronService& crons) {
  router.add("POST", "/ojs/v1/cron", [&crons](const HttpRequest& r) {
    auto cron = crons.put(parse_json_body(r), auth::tenant_scope(), auth::current_caller_name(""));
    auto reply = json_reply(201, {{"cron", cron}});
    reply.headers.emplace_back("Location", "/ojs/v1/cron/" + cron["name"].get<std::string>());
    return reply;
  });
  // ojs-cron.md §8.2 answers {cron_jobs, count}; `crons` (our earlier name) is kept
  // alongside for one release. GET /ojs/v1/crons is the official dashboard's name for it
  // (no spec document defines it); the dashboard pages through `items` with
  // `pagination{page, per_page, total}` (?page=&per_page=), while the other keys keep
  // every cron for the clients that read them.
  for (const std::string path : {"/ojs/v1/cron", "/ojs/v1/crons"})
    router.add("GET", path, [&crons](const HttpRequest& r) {
      auto out = crons.list(auth::tenant_scope());
      const auto& all = out["crons"];
      const int page = int_query(r, "page", 1, 1, 1000000);
      const int per_page = int_query(r, "per_page", 50, 1, 1000);
      nlohmann::json items = nlohmann::json::array();
      const auto first = static_cast<std::size_t>(page - 1) * static_cast<std::size_t>(per_page);
      for (std::size_t i = first; i < all.size() && items.size() < static_cast<std::size_t>(per_page); ++i) items.push_back(all[i]);
      out["items"] = std::move(items);
      out["pagination"] = {{"page", page}, {"per_page", per_page}, {"total", all.size()}};
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
