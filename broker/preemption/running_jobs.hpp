// Active jobs as preemption sees them (shared by the controller's passes).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "broker/preemption/victims.hpp"
#include "broker/store/job_record.hpp"
#include "ojs/ml/requirements.hpp"

namespace ojs::broker {

// The job's ext_ml_* requirements (nullopt when its document no longer parses).
std::optional<ml::Requirements> requirements_of(const JobRecord& job);
// What preemption needs to know of an active job (gpus/devices/labels are filled
// by the caller from where it found the job).
RunningJob running_job_from(const JobRecord& job, const std::string& queue, std::int64_t now);

}  // namespace ojs::broker
