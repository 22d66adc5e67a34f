#include "ojs/ml/requirement_class.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "ojs/core/digest.hpp"
#include "json_fields.hpp"
#include "ojs/core/error.hpp"

namespace ojs::ml {
namespace {

using nlohmann::json;

// Rules are AND-ed (or summed, for preferred), so their order carries no meaning:
// sort values of set operators and the rule list itself.
json rules_json(const std::vector<AffinityRule>& rules, bool weighted) {
  std::vector<json> out;
  for (const auto& r : rules) {
    std::vector<std::string> values = r.values;
    if (r.op == AffinityOp::In || r.op == AffinityOp::NotIn) {
      std::sort(values.begin(), values.end());
      values.erase(std::unique(values.begin(), values.end()), values.end());
    }
    json j = {{"key", r.key}, {"operator", to_string(r.op)}};
    if (!values.empty()) j["values"] = values;
    if (weighted) j["weight"] = r.weight;
    out.push_back(std::move(j));
  }
  std::sort(out.begin(), out.end(), [](const json& a, const json& b) { return a.dump() < b.dump(); });
  return out;
}

}  // namespace

// The canonical form is itself a normalised ext_ml_* document: the broker can
// read it like a job, and requirements_from_class_json is just parse_requirements.
nlohmann::json class_json(const Requirements& req) {
  const HardConstraints& h = req.hard;
  json c = json::object();
  if (h.accelerator && *h.accelerator != Accelerator::cpu) c["ext_ml_accelerator"] = to_string(*h.accelerator);
  if (h.gpu.count > 0) {
    c["ext_ml_gpu_count"] = h.gpu.count;
    if (!h.gpu.type.empty()) c["ext_ml_gpu_type"] = h.gpu.type;
    if (h.gpu.memory_gb) c["ext_ml_gpu_memory_gb"] = canonical_number(*h.gpu.memory_gb);
    if (h.gpu.min_compute_capability) c["ext_ml_gpu_compute_capability"] = h.gpu.min_compute_capability->str();
    if (h.gpu.interconnect != Interconnect::any) c["ext_ml_gpu_interconnect"] = to_string(h.gpu.interconnect);
  }
  if (!h.tpu.type.empty()) c["ext_ml_tpu_type"] = h.tpu.type;
  if (!h.tpu.topology.empty()) c["ext_ml_tpu_topology"] = h.tpu.topology;
  if (h.tpu.chip_count > 0) c["ext_ml_tpu_chip_count"] = h.tpu.chip_count;
  if (h.memory_gb) c["ext_ml_memory_gb"] = canonical_number(*h.memory_gb);
  if (h.cpu_cores) c["ext_ml_cpu_cores"] = *h.cpu_cores;
  if (h.storage_gb) c["ext_ml_storage_gb"] = canonical_number(*h.storage_gb);
  if (h.shm_size_gb) c["ext_ml_shm_size_gb"] = canonical_number(*h.shm_size_gb);
  if (!h.node_selector.empty()) c["ext_ml_node_selector"] = h.node_selector;
  json affinity = json::object();
  if (!h.required_affinity.empty()) affinity["required"] = rules_json(h.required_affinity, false);
  if (!req.soft.preferred_affinity.empty()) affinity["preferred"] = rules_json(req.soft.preferred_affinity, true);
  if (!affinity.empty()) c["ext_ml_affinity"] = std::move(affinity);
  if (!h.anti_affinity.empty()) c["ext_ml_anti_affinity"] = {{"required", rules_json(h.anti_affinity, false)}};
  if (!h.pinned_model_id.empty()) {
    c["ext_ml_model_id"] = h.pinned_model_id;
    c["ext_ml_model_version"] = h.pinned_model_version;
  } else if (!req.soft.locality_model_id.empty()) {
    c["ext_ml_model_id"] = req.soft.locality_model_id;
  }
  if (!h.runtime.empty()) c["ext_ml_runtime"] = h.runtime;
  if (!h.model_format.empty()) c["ext_ml_model_format"] = h.model_format;
  // a gang is its own class: only the gang claim takes its jobs.
  if (h.gang.size > 0) {
    // A fixed gang keeps its `size` (its class id stays what it was before elastic gangs).
    if (h.gang.elastic()) c["ext_ml_gang"] = {{"min_size", h.gang.size}, {"max_size", h.gang.max_size}};
    else c["ext_ml_gang"] = {{"size", h.gang.size}};
    if (!h.gang.same_label.empty()) c["ext_ml_gang"]["same_label"] = h.gang.same_label;
  }
  return c;
}

RequirementClass requirement_class(const Requirements& req) {
  json c = class_json(req);
  std::string canonical = c.dump();
  return {c.empty() ? std::string(kDefaultClassId) : sha256_hex16(canonical), std::move(canonical)};
}

std::string class_id(const Requirements& req) { return requirement_class(req).id; }

Requirements requirements_from_class_json(const nlohmann::json& canonical) {
  if (!canonical.is_object()) throw invalid_field("class", "must be an object");
  return parse_requirements(canonical);
}

}  // namespace ojs::ml
