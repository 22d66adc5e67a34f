#include "broker/governance/limits.hpp"

#include <algorithm>

#include "ojs/core/error.hpp"
#include "ojs/ml/types.hpp"

namespace ojs::broker::governance {

using nlohmann::json;

namespace {

[[noreturn]] void refuse(const std::string& limit, const std::string& message, json details, const std::string& scope) {
  details["limit"] = limit;
  details["scope"] = scope;
  throw OjsError(ErrorCode::validation_error, (scope == "broker" ? "broker bound " : "queue limit ") + limit + ": " + message, details);
}

// what: the field as the producer gave it (named in the message and details.field); unit: after the value, if any.
template <class V, class M>
void at_most(const std::string& limit, const std::string& what, V value, const std::optional<M>& max, const std::string& scope,
             const char* unit = "") {
  if (max && value > *max)
    refuse(limit, what + " " + ml::format_number(static_cast<double>(value)) + unit + " exceeds " + ml::format_number(static_cast<double>(*max)) + unit,
           {{"field", what}, {"value", value}, {"max", *max}}, scope);
}

void one_of(const std::string& limit, const char* attribute, const std::string& value, const std::vector<std::string>& allowed,
            const std::string& scope) {
  if (allowed.empty() || std::find(allowed.begin(), allowed.end(), value) != allowed.end()) return;
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
  refuse(limit, std::string(attribute) + " '" + value + "' is not one of " + list, {{"value", value}, {"allowed", allowed}}, scope);
}

}  // namespace

void enforce_limits(const ml::Requirements& r, std::optional<std::int64_t> job_timeout_ms, const MlLimits& limits,
                    const std::string& scope, const std::string& timeout_field) {
  const auto& gpu = r.hard.gpu;
  at_most("max_gpu_count", "ext_ml_gpu_count", gpu.count, limits.max_gpu_count, scope);
  if (gpu.memory_gb) at_most("max_gpu_memory_gb", "ext_ml_gpu_memory_gb", *gpu.memory_gb, limits.max_gpu_memory_gb, scope);
  if (r.hard.memory_gb) at_most("max_memory_gb", "ext_ml_memory_gb", *r.hard.memory_gb, limits.max_memory_gb, scope);
  std::optional<long long> timeout_s;
  std::string field = timeout_field;
  if (r.scheduling.timeout_seconds) {
    timeout_s = *r.scheduling.timeout_seconds;
    field = "ext_ml_timeout_seconds";
  } else if (job_timeout_ms && *job_timeout_ms > 0) {
    timeout_s = (*job_timeout_ms + 999) / 1000;
  }
  if (timeout_s) at_most("max_timeout_seconds", field, *timeout_s, limits.max_timeout_seconds, scope, " s");
  if (gpu.count > 0 && !limits.allowed_gpu_types.empty()) {
    if (gpu.type.empty())
      refuse("allowed_gpu_types", "the job must name ext_ml_gpu_type (queue allows only some GPU types)",
             {{"value", nullptr}, {"allowed", limits.allowed_gpu_types}}, scope);
    one_of("allowed_gpu_types", "ext_ml_gpu_type", gpu.type, limits.allowed_gpu_types, scope);
  }
  if (r.scheduling.priority_class)
    one_of("allowed_priority_classes", "ext_ml_priority_class", std::string(ml::to_string(*r.scheduling.priority_class)),
           limits.allowed_priority_classes, scope);
  if (r.scheduling.escalation_target_class)
    one_of("allowed_priority_classes", "ext_ml_escalation_target_class",
           std::string(ml::to_string(*r.scheduling.escalation_target_class)), limits.allowed_priority_classes, scope);
}

}  // namespace ojs::broker::governance
