#include "broker/governance/defaults.hpp"

#include "ojs/ml/meta_aliases.hpp"

namespace ojs::broker::governance {

std::vector<std::string> meta_groups_of(const std::string& attribute) {
  std::string_view name = std::string_view(attribute).substr(attribute.rfind("ext_ml_", 0) == 0 ? 7 : 0);
  if (name == "node_affinity") name = "affinity";  // the top-level synonym (requirements.cpp)
  std::vector<std::string> groups;
  for (const auto group : ml::meta_groups_of(name)) groups.emplace_back(group);
  return groups;
}

std::vector<std::string> apply_defaults(nlohmann::json& document, const nlohmann::json& ml_defaults) {
  std::vector<std::string> filled;
  if (!ml_defaults.is_object() || !document.is_object()) return filled;
  const nlohmann::json* meta = document.contains("meta") && document["meta"].is_object() ? &document["meta"] : nullptr;
  const bool affinity_synonym = document.contains("ext_ml_node_affinity");
  for (auto it = ml_defaults.begin(); it != ml_defaults.end(); ++it) {
    const std::string& name = it.key();
    if (document.contains(name)) continue;
    if (name == "ext_ml_affinity" && affinity_synonym) continue;
    bool said_in_meta = false;
    if (meta)
      for (const auto& group : meta_groups_of(name)) said_in_meta = said_in_meta || meta->contains(group);
    if (said_in_meta) continue;
    document[name] = it.value();
    filled.push_back(name);
  }
  return filled;
}

}  // namespace ojs::broker::governance
