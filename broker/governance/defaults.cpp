#include "broker/governance/defaults.hpp"

#include <array>
#include <utility>

namespace ojs::broker::governance {

namespace {
// Attribute-name prefixes (without ext_ml_) of the meta groups; first match wins.
constexpr std::array<std::pair<std::string_view, std::string_view>, 24> kGroups = {{
    {"model_", "model"},          {"node_selector", "node_selector"}, {"node_affinity", "affinity"},
    {"anti_affinity", "affinity"}, {"affinity", "affinity"},           {"checkpoint_", "checkpoint"},
    {"priority_class", "preemption"}, {"preempt", "preemption"},      {"reservation_", "preemption"},
    {"priority_escalation", "preemption"}, {"escalation_", "preemption"}, {"max_tokens", "compute"},
    {"max_batch_size", "compute"}, {"timeout_seconds", "compute"},     {"runtime", "compute"},
    {"precision", "compute"},      {"distributed_strategy", "compute"}, {"accelerator", "resources"},
    {"gpu_", "resources"},         {"tpu_", "resources"},              {"memory_gb", "resources"},
    {"cpu_cores", "resources"},    {"storage_gb", "resources"},        {"shm_size_gb", "resources"},
}};
}  // namespace

std::string meta_group_of(const std::string& attribute) {
  const std::string_view name = std::string_view(attribute).substr(attribute.rfind("ext_ml_", 0) == 0 ? 7 : 0);
  for (const auto& [prefix, group] : kGroups)
    if (name.substr(0, prefix.size()) == prefix) return std::string(group);
  return {};
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
    const std::string group = meta_group_of(name);
    if (meta && !group.empty() && meta->contains(group)) continue;
    document[name] = it.value();
    filled.push_back(name);
  }
  return filled;
}

}  // namespace ojs::broker::governance
