// Workflows (OJS level 3): POST /ojs/v1/workflows, GET/DELETE /ojs/v1/workflows/{id};
// GET /ojs/v1/workflows lists them (the dashboard's alias, no spec defines it).
#include "broker/api/api.hpp"
#include "broker/api/json_io.hpp"
#include "broker/api/tenant_header.hpp"
#include "broker/auth/identity.hpp"
#include "broker/workflows/workflow_service.hpp"
#include "ojs/core/error.hpp"

namespace ojs::broker {

namespace {

// X-OJS-Tenant applies to every job of the workflow, as for a batch PUSH.
nlohmann::json with_tenant_header_on_workflow(nlohmann::json body, const HttpRequest& request) {
  if (request.header("x-ojs-tenant").empty() || !body.is_object()) return body;
  for (const char* list : {"steps", "jobs"}) {
    if (!body.contains(list) || !body[list].is_array()) continue;
    auto& jobs = body[list];
    for (std::size_t i = 0; i < jobs.size(); ++i)
      jobs[i] = with_tenant_header(std::move(jobs[i]), request, std::string(list) + "[" + std::to_string(i) + "].");
  }
  if (body.contains("callbacks") && body["callbacks"].is_object())
    for (auto& [kind, job] : body["callbacks"].items()) job = with_tenant_header(std::move(job), request, "callbacks." + kind + ".");
  return body;
}

// A tenant-pinned token sees and cancels only its tenant's workflows (404 otherwise, as for jobs).
nlohmann::json in_tenant_scope(nlohmann::json workflow, const std::string& id) {
  const auto scope = auth::tenant_scope();
  if (!scope.empty() && workflow["workflow"].value("tenant", std::string()) != scope)
    throw OjsError(ErrorCode::not_found, "workflow " + id + " not found", {{"workflow_id", id}});
  return workflow;
}

}  // namespace

void register_workflows_api(Router& router, WorkflowService& workflows) {
  router.add("POST", "/ojs/v1/workflows", [&workflows](const HttpRequest& r) {
    auto created = workflows.create(with_tenant_header_on_workflow(parse_json_body(r), r));
    auto reply = json_reply(201, created);
    reply.headers.emplace_back("Location", "/ojs/v1/workflows/" + created["workflow"]["id"].get<std::string>());
    return reply;
  });
  // The official dashboard's workflow list (no spec document defines it): {items, pagination}.
  router.add("GET", "/ojs/v1/workflows", [&workflows](const HttpRequest& r) {
    return json_reply(200, workflows.list(int_query(r, "page", 1, 1, 1000000), int_query(r, "per_page", 20, 1, 100),
                                          auth::tenant_scope()));
  });
  router.add("GET", "/ojs/v1/workflows/{id}", [&workflows](const HttpRequest& r) {
    const auto& id = r.params.at("id");
    return json_reply(200, in_tenant_scope(workflows.get(id), id));
  });
  router.add("DELETE", "/ojs/v1/workflows/{id}", [&workflows](const HttpRequest& r) {
    const auto& id = r.params.at("id");
    in_tenant_scope(workflows.get(id), id);
    return json_reply(200, workflows.cancel(id));
  });
}

}  // namespace ojs::broker
