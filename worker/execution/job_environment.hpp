// The environment a job process starts with: the agent's own environment plus
// the OJS_* variables and the GPU assignment.
#pragma once
#include "worker/execution/job_view.hpp"
#include "worker/execution/job_workspace.hpp"

#include <string>
#include <vector>

namespace ojs::worker {

// "0,3" for devices {0,3}; "" for none, which hides every GPU from CUDA.
std::string cuda_visible_devices(const std::vector<int>& devices);
// "MIG-a,MIG-b": CUDA_VISIBLE_DEVICES from device ids (see ml::visible_device_ids).
std::string join_device_ids(const std::vector<std::string>& ids);

// inherited: "NAME=value" entries (normally environ); OJS/CUDA names in it are replaced.
std::vector<std::string> job_environment(const JobView& job, const JobWorkspace& workspace,
                                         const std::vector<std::string>& inherited);

std::vector<std::string> current_environment();

}  // namespace ojs::worker
