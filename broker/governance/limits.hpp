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

// job_timeout_ms: the OJS timeout_ms of the job (ext_ml_timeout_seconds overrides it).
void enforce_limits(const ml::Requirements& requirements, std::optional<std::int64_t> job_timeout_ms,
                    const MlLimits& limits, const std::string& scope);

}  // namespace ojs::broker::governance
