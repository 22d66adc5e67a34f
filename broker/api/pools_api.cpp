// PUT, GET and DELETE /ojs/v1/admin/pools/{name}, GET /ojs/v1/admin/pools and
// GET /ojs/v1/admin/scheduling/stats. A pool answers wrapped, {"pool": {...}}, as the
// public suite reads it; the list is {"items": [...]} as the spec shows it.
#include "broker/api/pools_api.hpp"

#include "broker/api/json_io.hpp"
#include "broker/pools/pool_service.hpp"
#include "broker/pools/scheduling_stats.hpp"

namespace ojs::broker {

void register_pools_api(Router& router, pools::PoolService& pools, pools::SchedulingStats& stats) {
  constexpr const char* kBase = "/ojs/v1/admin/pools";
  router.add("GET", kBase, [&pools](const HttpRequest&) { return json_reply(200, pools.list()); });
  router.add("PUT", std::string(kBase) + "/{name}", [&pools](const HttpRequest& r) {
    auto saved = pools.put(r.params.at("name"), parse_json_body(r));
    auto reply = json_reply(saved.created ? 201 : 200, {{"pool", saved.pool}});
    if (saved.created) reply.headers.emplace_back("Location", r.path);
    return reply;
  });
  router.add("GET", std::string(kBase) + "/{name}", [&pools](const HttpRequest& r) {
    return json_reply(200, {{"pool", pools.get(r.params.at("name"))}});
  });
  router.add("DELETE", std::string(kBase) + "/{name}", [&pools](const HttpRequest& r) {
    return json_reply(200, {{"pool", pools.remove(r.params.at("name"))}, {"deleted", true}});
  });
  router.add("GET", "/ojs/v1/admin/scheduling/stats", [&stats](const HttpRequest&) { return json_reply(200, stats.read()); });
}

}  // namespace ojs::broker
