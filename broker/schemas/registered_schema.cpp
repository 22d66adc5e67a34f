#include "broker/schemas/registered_schema.hpp"

#include <algorithm>

namespace ojs::broker::schemas {

std::string RegisteredSchema::record() const {
  nlohmann::json out = {{"job_type", job_type}, {"version", version.text}, {"schema", schema}, {"created_at", created_at}};
  if (!compatible_with.is_null()) out["compatible_with"] = compatible_with;
  return out.dump();
}

std::optional<RegisteredSchema> RegisteredSchema::from_record(const std::string& text) {
  const auto doc = nlohmann::json::parse(text, nullptr, false);
  if (!doc.is_object() || !doc.contains("schema") || !doc.value("job_type", nlohmann::json()).is_string() ||
      !doc.value("version", nlohmann::json()).is_string())
    return std::nullopt;
  auto version = SchemaVersion::parse(doc["version"].get<std::string>());
  if (!version) return std::nullopt;
  return RegisteredSchema{doc["job_type"].get<std::string>(), std::move(*version), doc["schema"],
                          doc.value("compatible_with", nlohmann::json()), doc.value("created_at", "")};
}

nlohmann::json RegisteredSchema::view() const {
  nlohmann::json out = {{"job_type", job_type}, {"type", job_type}, {"version", version.to_json()}, {"schema", schema},
                        {"created_at", created_at}};
  if (!compatible_with.is_null()) out["compatible_with"] = compatible_with;
  return out;
}

std::vector<RegisteredSchema> registered_versions(SchemaStore& store, const std::string& tenant, const std::string& job_type) {
  std::vector<RegisteredSchema> out;
  for (const auto& [version, text] : store.versions(tenant, job_type))
    if (auto registered = RegisteredSchema::from_record(text)) out.push_back(std::move(*registered));
  std::sort(out.begin(), out.end(), [](const RegisteredSchema& a, const RegisteredSchema& b) { return compare(a.version, b.version) > 0; });
  return out;
}

}  // namespace ojs::broker::schemas
