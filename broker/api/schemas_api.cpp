// The schema registry in its two bindings, over one registry:
//   ojs-schema-registry.md §10: POST /ojs/v1/schemas, GET /ojs/v1/schemas/{type},
//     GET .../{type}/versions, GET and DELETE .../{type}/{version}; a schema answers
//     wrapped, {"schema": {...}}.
//   ojs-job-versioning.md §11: PUT, GET and DELETE /ojs/v1/admin/schemas/{type}/{version},
//     GET /ojs/v1/admin/schemas/{type} (the latest, with every version listed),
//     GET .../{type}/versions; a schema answers as the body itself.
// Each is scoped to the caller's tenant (the token's pin or X-OJS-Tenant).
#include "broker/api/schemas_api.hpp"

#include "broker/api/json_io.hpp"
#include "broker/api/tenant_header.hpp"
#include "broker/schemas/schema_registry.hpp"
#include "ojs/core/error.hpp"

namespace ojs::broker {

namespace {

const std::string& type_param(const HttpRequest& r) { return r.params.at("type"); }
const std::string& version_param(const HttpRequest& r) { return r.params.at("version"); }

void register_spec_binding(Router& router, schemas::SchemaRegistry& registry) {
  constexpr const char* kBase = "/ojs/v1/schemas";
  router.add("POST", kBase, [&registry](const HttpRequest& r) {
    const auto tenant = request_tenant(r);
    const auto body = parse_json_body(r);
    if (!body.contains("job_type") || !body["job_type"].is_string()) throw invalid_field("job_type", "is required: the job type (a string)");
    if (!body.contains("version")) throw invalid_field("version", "is required");
    const auto job_type = body["job_type"].get<std::string>();
    auto schema = registry.register_version(tenant, job_type, body["version"], body);
    auto reply = json_reply(201, {{"schema", schema}});
    const auto& version = schema["version"];
    reply.headers.emplace_back("Location", std::string(kBase) + "/" + job_type + "/" + (version.is_string() ? version.get<std::string>() : version.dump()));
    return reply;
  });
  router.add("GET", std::string(kBase) + "/{type}", [&registry](const HttpRequest& r) {
    return json_reply(200, {{"schema", registry.latest(request_tenant(r), type_param(r))}});
  });
  router.add("GET", std::string(kBase) + "/{type}/versions", [&registry](const HttpRequest& r) {
    return json_reply(200, {{"versions", registry.versions(request_tenant(r), type_param(r))}});
  });
  router.add("GET", std::string(kBase) + "/{type}/{version}", [&registry](const HttpRequest& r) {
    return json_reply(200, {{"schema", registry.version(request_tenant(r), type_param(r), version_param(r))}});
  });
  router.add("DELETE", std::string(kBase) + "/{type}/{version}", [&registry](const HttpRequest& r) {
    return json_reply(200, {{"schema", registry.remove(request_tenant(r), type_param(r), version_param(r))}, {"deleted", true}});
  });
}

void register_admin_binding(Router& router, schemas::SchemaRegistry& registry) {
  constexpr const char* kBase = "/ojs/v1/admin/schemas";
  router.add("PUT", std::string(kBase) + "/{type}/{version}", [&registry](const HttpRequest& r) {
    const auto tenant = request_tenant(r);
    auto reply = json_reply(201, registry.register_version(tenant, type_param(r), version_param(r), parse_json_body(r)));
    reply.headers.emplace_back("Location", r.path);
    return reply;
  });
  router.add("GET", std::string(kBase) + "/{type}", [&registry](const HttpRequest& r) {
    const auto tenant = request_tenant(r);
    auto latest = registry.latest(tenant, type_param(r));
    latest["versions"] = registry.versions(tenant, type_param(r));  // §11.2: the type's versions
    return json_reply(200, latest);
  });
  router.add("GET", std::string(kBase) + "/{type}/versions", [&registry](const HttpRequest& r) {
    return json_reply(200, {{"versions", registry.versions(request_tenant(r), type_param(r))}});
  });
  router.add("GET", std::string(kBase) + "/{type}/{version}", [&registry](const HttpRequest& r) {
    return json_reply(200, registry.version(request_tenant(r), type_param(r), version_param(r)));
  });
  router.add("DELETE", std::string(kBase) + "/{type}/{version}", [&registry](const HttpRequest& r) {
    auto removed = registry.remove(request_tenant(r), type_param(r), version_param(r));
    removed["deleted"] = true;
    return json_reply(200, removed);
  });
}

}  // namespace

void register_schemas_api(Router& router, schemas::SchemaRegistry& registry) {
  register_spec_binding(router, registry);
  register_admin_binding(router, registry);
}

}  // namespace ojs::broker
