#include "broker/schemas/schema_registry.hpp"

#include "ojs/core/client_schema.hpp"
#include "ojs/core/envelope.hpp"
#include "ojs/core/error.hpp"
#include "ojs/core/json_schema.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker::schemas {

namespace {

using nlohmann::json;

void require_job_type(const std::string& job_type) {
  if (!is_valid_job_type(job_type))
    throw invalid_field("job_type", "must match ^[a-z][a-z0-9_-]*(\\.[a-z][a-z0-9_-]*)*$ (dot-separated lowercase segments, at most 255)");
}

// A version given as a number (the admin paths' 1) or a string.
SchemaVersion require_version(const json& value, const std::string& field) {
  std::optional<SchemaVersion> parsed;
  if (value.is_string()) parsed = SchemaVersion::parse(value.get<std::string>());
  else if (value.is_number_unsigned() || (value.is_number_integer() && value.get<long long>() >= 0)) parsed = SchemaVersion::parse(value.dump());
  if (!parsed) throw invalid_field(field, kVersionRule);
  return *parsed;
}

OjsError not_registered(const std::string& job_type, const std::string& version) {
  json details = {{"job_type", job_type}};
  if (!version.empty()) details["version"] = version;
  return OjsError(ErrorCode::not_found,
                  version.empty() ? "no schema is registered for job type " + job_type
                                  : "no schema version " + version + " is registered for job type " + job_type,
                  details);
}

// The args schema of a registration body, checked as the validator will run it.
json schema_of(const json& body) {
  if (!body.is_object()) throw invalid_field("$", "must be an object");
  if (body.contains("schema") && body.contains("args_schema")) throw invalid_field("args_schema", "cannot be given with schema (they name the same)");
  const char* field = body.contains("args_schema") ? "args_schema" : "schema";
  if (!body.contains(field) || body[field].is_null()) throw invalid_field("schema", "is required: the JSON Schema of the job type's args");
  const json& schema = body[field];
  const auto prepared = prepare_client_schema(schema, field, std::string("/") + field);
  try {
    (void)JsonSchema::of_client(prepared);
  } catch (const std::exception& e) {
    throw invalid_field(field, std::string("is not a valid JSON Schema: ") + e.what(), std::string("/") + field);
  }
  return schema;
}

json compatible_with_of(const json& body) {
  if (!body.contains("compatible_with") || body["compatible_with"].is_null()) return nullptr;
  const auto& list = body["compatible_with"];
  if (!list.is_array() || list.size() > SchemaRegistry::kMaxVersions) throw invalid_field("compatible_with", "must be an array of at most 100 versions");
  json out = json::array();
  for (std::size_t i = 0; i < list.size(); ++i) out.push_back(require_version(list[i], "compatible_with[" + std::to_string(i) + "]").text);
  return out;
}

}  // namespace

json SchemaRegistry::register_version(const std::string& tenant, const std::string& job_type, const json& version_value,
                                      const json& body) {
  require_job_type(job_type);
  const auto version = require_version(version_value, "version");
  auto schema = schema_of(body);
  for (const char* named : {"job_type", "type"})
    if (body.contains(named) && body[named] != job_type) throw invalid_field(named, "must be the job type registered (" + job_type + ")");
  if (body.contains("version") && compare(require_version(body["version"], "version"), version) != 0)
    throw invalid_field("version", "must be the version registered (" + version.text + ")");
  const auto conflict = [&](const std::string& existing) {
    return OjsError(ErrorCode::conflict, "schema version " + existing + " of job type " + job_type + " is already registered",
                    {{"job_type", job_type}, {"version", version.to_json()}, {"existing_version", existing}});
  };
  for (const auto& existing : registered_versions(store_, tenant, job_type))
    if (compare(existing.version, version) == 0) throw conflict(existing.version.text);

  RegisteredSchema registered{job_type, version, std::move(schema), compatible_with_of(body), format_rfc3339(now_ms())};
  switch (store_.put(tenant, job_type, version.text, registered.record(), kMaxVersions)) {
    case SchemaStore::Put::exists: throw conflict(version.text);
    case SchemaStore::Put::limit:
      throw OjsError(ErrorCode::validation_error, "job type " + job_type + " has the most schema versions kept (" + std::to_string(kMaxVersions) + "); delete one first",
                     {{"field", "version"}, {"rule", "at most 100 versions per job type"}, {"limit", kMaxVersions}});
    case SchemaStore::Put::stored: break;
  }
  args_check_.forget(tenant, job_type);
  return registered.view();
}

json SchemaRegistry::latest(const std::string& tenant, const std::string& job_type) {
  require_job_type(job_type);
  const auto all = registered_versions(store_, tenant, job_type);
  if (all.empty()) throw not_registered(job_type, "");
  return all.front().view();
}

RegisteredSchema SchemaRegistry::find(const std::string& tenant, const std::string& job_type, const std::string& version) {
  require_job_type(job_type);
  const auto wanted = require_version(version, "version");
  for (auto& registered : registered_versions(store_, tenant, job_type))
    if (compare(registered.version, wanted) == 0) return std::move(registered);
  throw not_registered(job_type, wanted.text);
}

json SchemaRegistry::version(const std::string& tenant, const std::string& job_type, const std::string& version) {
  return find(tenant, job_type, version).view();
}

json SchemaRegistry::versions(const std::string& tenant, const std::string& job_type) {
  require_job_type(job_type);
  json out = json::array();
  for (const auto& registered : registered_versions(store_, tenant, job_type))
    out.push_back({{"version", registered.version.to_json()}, {"created_at", registered.created_at}, {"is_latest", out.empty()}});
  return out;
}

json SchemaRegistry::remove(const std::string& tenant, const std::string& job_type, const std::string& version) {
  const auto registered = find(tenant, job_type, version);
  if (!store_.remove(tenant, job_type, registered.version.text)) throw not_registered(job_type, registered.version.text);
  args_check_.forget(tenant, job_type);
  return registered.view();
}

}  // namespace ojs::broker::schemas
