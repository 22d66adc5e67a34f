// The schema registry as the API manages it (ojs-schema-registry.md §4,
// ojs-job-versioning.md §6.1, §11): register a version of a job type's args
// schema, read the latest or one version, list the versions, delete one. Every
// call is scoped to a tenant ("" = none): a tenant's schemas check its own jobs,
// and another tenant neither sees nor changes them (404, as if absent).
#pragma once
#include <nlohmann/json.hpp>

#include <string>

#include "broker/schemas/args_check.hpp"
#include "broker/schemas/registered_schema.hpp"
#include "broker/store/schema_store.hpp"

namespace ojs::broker::schemas {

class SchemaRegistry {
 public:
  SchemaRegistry(SchemaStore& store, ArgsCheck& args_check) : store_(store), args_check_(args_check) {}

  static constexpr long long kMaxVersions = 100;  // per tenant and job type

  // `body`: {"schema" (or "args_schema"), "compatible_with"?}; a `job_type`, `type`
  // or `version` it also names must be the registered one. 409 when the version
  // (or one of equal precedence) is registered already.
  nlohmann::json register_version(const std::string& tenant, const std::string& job_type, const nlohmann::json& version,
                                  const nlohmann::json& body);
  nlohmann::json latest(const std::string& tenant, const std::string& job_type);
  nlohmann::json version(const std::string& tenant, const std::string& job_type, const std::string& version);
  // [{version, created_at, is_latest}], newest first; empty for a type without any.
  nlohmann::json versions(const std::string& tenant, const std::string& job_type);
  nlohmann::json remove(const std::string& tenant, const std::string& job_type, const std::string& version);

 private:
  RegisteredSchema find(const std::string& tenant, const std::string& job_type, const std::string& version);

  SchemaStore& store_;
  ArgsCheck& args_check_;
};

}  // namespace ojs::broker::schemas
