#include "ojs/ml/meta_aliases.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace ojs::ml {

namespace {

constexpr MetaAlias kMetaAliases[] = {
    {{"resources", "accelerator"}, "accelerator"},
    {{"resources", "gpu", "count"}, "gpu_count"},
    {{"resources", "gpu", "type"}, "gpu_type"},
    {{"resources", "gpu", "memory_gb"}, "gpu_memory_gb"},
    {{"resources", "gpu", "compute_capability"}, "gpu_compute_capability"},
    {{"resources", "gpu", "interconnect"}, "gpu_interconnect"},
    {{"resources", "tpu", "type"}, "tpu_type"},
    {{"resources", "tpu", "topology"}, "tpu_topology"},
    {{"resources", "tpu", "chip_count"}, "tpu_chip_count"},
    {{"resources", "cpu_cores"}, "cpu_cores"},
    {{"resources", "memory_gb"}, "memory_gb"},
    {{"resources", "storage_gb"}, "storage_gb"},
    {{"resources", "shm_size_gb"}, "shm_size_gb"},
    {{"model", "name"}, "model_id"},  // the spec RFC's and the SDK ML helpers' name; model.id wins when both are sent
    {{"model", "id"}, "model_id"},
    {{"model", "version"}, "model_version"},
    {{"model", "provider"}, "model_provider"},
    {{"model", "checksum"}, "model_checksum"},
    {{"model", "format"}, "model_format"},
    {{"model", "registry"}, "model_registry"},
    {{"model", "registry_uri"}, "model_registry_uri"},
    {{"compute", "max_tokens"}, "max_tokens"},
    {{"compute", "max_batch_size"}, "max_batch_size"},
    {{"compute", "timeout_seconds"}, "timeout_seconds"},
    {{"compute", "estimated_duration_seconds"}, "estimated_duration_seconds"},
    {{"compute", "runtime"}, "runtime"},
    {{"compute", "precision"}, "precision"},
    {{"compute", "distributed_strategy"}, "distributed_strategy"},
    {{"affinity"}, "affinity"},
    {{"node_affinity"}, "affinity"},
    {{"anti_affinity"}, "anti_affinity"},
    {{"node_selector"}, "node_selector"},
    {{"checkpoint", "enabled"}, "checkpoint_enabled"},
    {{"checkpoint", "interval_s"}, "checkpoint_interval_s"},
    {{"checkpoint", "storage_uri"}, "checkpoint_storage_uri"},
    {{"checkpoint", "max_checkpoints"}, "checkpoint_max_count"},  // SDK ML helpers; max_count wins when both are sent
    {{"checkpoint", "max_count"}, "checkpoint_max_count"},
    {{"checkpoint", "on_preempt"}, "checkpoint_on_preempt"},
    {{"preemption", "priority_class"}, "priority_class"},
    {{"preemption", "preemptible"}, "preemptible"},
    {{"preemption", "grace_period_s"}, "preemption_grace_period_s"},
    {{"preemption", "min_runtime_before_preempt_s"}, "min_runtime_before_preempt_s"},
    {{"preemption", "checkpoint_on_preempt"}, "checkpoint_on_preempt"},
    {{"preemption", "reservation_id"}, "reservation_id"},
    {{"preemption", "reservation_timeout_s"}, "reservation_timeout_s"},
    {{"preemption", "priority_escalation"}, "priority_escalation"},
    {{"preemption", "escalation_after_s"}, "escalation_after_s"},
    {{"preemption", "escalation_target_class"}, "escalation_target_class"},
};

// The node at `alias.path` under meta, or nullptr.
const nlohmann::json* at_path(const nlohmann::json& meta, const MetaAlias& alias, std::string* path) {
  const nlohmann::json* node = &meta;
  std::string where = "meta";
  for (std::string_view part : alias.path) {
    if (part.empty()) break;
    if (!node->is_object()) return nullptr;
    const auto it = node->find(part);
    if (it == node->end()) return nullptr;
    where.append(".").append(part);
    node = &*it;
  }
  if (path) *path = std::move(where);
  return node;
}

}  // namespace

std::span<const MetaAlias> meta_aliases() { return kMetaAliases; }

const nlohmann::json* meta_value(const nlohmann::json& job, std::string_view attribute, std::string* path) {
  if (!job.is_object()) return nullptr;
  const auto meta = job.find("meta");
  if (meta == job.end() || !meta->is_object()) return nullptr;
  const nlohmann::json* found = nullptr;
  for (const auto& alias : kMetaAliases)
    if (alias.attribute == attribute)
      if (const auto* node = at_path(*meta, alias, path)) found = node;
  if (attribute == "gpu_count")  // the count shorthand
    if (auto r = meta->find("resources"); r != meta->end() && r->is_object())
      if (auto g = r->find("gpu"); g != r->end() && g->is_number()) {
        if (path) *path = "meta.resources.gpu";
        found = &*g;
      }
  return found;
}

const nlohmann::json* ml_attribute(const nlohmann::json& job, std::string_view attribute) {
  if (!job.is_object()) return nullptr;
  if (auto it = job.find("ext_ml_" + std::string(attribute)); it != job.end() && !it->is_null()) return &*it;
  const auto* value = meta_value(job, attribute);
  return value && !value->is_null() ? value : nullptr;
}

std::vector<std::string_view> meta_groups_of(std::string_view attribute) {
  std::vector<std::string_view> groups;
  for (const auto& alias : kMetaAliases)
    if (alias.attribute == attribute && std::find(groups.begin(), groups.end(), alias.path[0]) == groups.end())
      groups.push_back(alias.path[0]);
  return groups;
}

}  // namespace ojs::ml
