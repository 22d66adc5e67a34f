// ml_limits at PUSH: a job that asks more than its queue (or the broker's global
// bounds) allows is refused with 422 validation_error naming the limit:
//   details {limit: "max_gpu_count", value: 16, max: 8, scope: "queue"}
// Global bounds use the same limits with scope "broker" (--max-job-gpus, ...).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "broker/governance/queue_config.hpp"
#include "ojs/ml/requirements.hpp"

namespace ojs::broker::governance {

// job_timeout_ms: the OJS timeout of the job (ext_ml_timeout_seconds overrides it),
// given as timeout_field (timeout_ms, or the OJS `timeout` in seconds): a refusal
// names the field in details.field, as every limit refusal does.
void enforce_limits(const ml::Requirements& requirements, std::optional<std::int64_t> job_timeout_ms,
                    const MlLimits& limits, const std::string& scope, const std::string& timeout_field = "timeout_ms");

}  // namespace ojs::broker::governance
