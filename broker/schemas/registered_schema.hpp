// One registered schema version, as stored and as answered. The answer serves both
// bindings: ojs-schema-registry.md's {"job_type", "version", "schema", "created_at"}
// and the admin paths' (ojs-job-versioning.md §11) `type` beside it.
#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include <vector>

#include "broker/schemas/schema_version.hpp"
#include "broker/store/schema_store.hpp"

namespace ojs::broker::schemas {

struct RegisteredSchema {
  std::string job_type;
  SchemaVersion version;
  nlohmann::json schema;           // as the client sent it
  nlohmann::json compatible_with;  // versions (ojs-job-versioning.md §6.1), null when not given
  std::string created_at;          // RFC 3339

  std::string record() const;  // what the store keeps
  static std::optional<RegisteredSchema> from_record(const std::string& text);
  nlohmann::json view() const;
};

// Every version registered for the tenant's job type, newest (highest precedence) first.
std::vector<RegisteredSchema> registered_versions(SchemaStore& store, const std::string& tenant, const std::string& job_type);

}  // namespace ojs::broker::schemas
