// The environment a job process starts with: the agent's own environment plus
// the OJS_* variables and the GPU assignment.
#pragma once
#include "worker/execution/job_view.hpp"
#include "worker/execution/job_workspace.hpp"

#include <string>
#include <vector>

namespace ojs::worker {

// "0,3" for devices {0,3}; "" for none (a log string: never what a job gets).
std::string cuda_visible_devices(const std::vector<int>& devices);
// CUDA_VISIBLE_DEVICES of a job without devices on a worker that manages GPUs.
// CUDA stops at the first invalid entry of the list, so "-1" shows no device:
// a CPU job cannot touch the GPUs other jobs were given, and CUDA code in it
// sees zero devices (cudaErrorNoDevice) rather than every GPU. Never empty,
// whose meaning depends on the framework.
inline constexpr const char* kNoVisibleDevices = "-1";
// "MIG-a,MIG-b": CUDA_VISIBLE_DEVICES from device ids (see ml::visible_device_ids).
std::string join_device_ids(const std::vector<std::string>& ids);

// CUDA_MPS_PINNED_DEVICE_MEM_LIMIT ("0=24414MB,1=24414MB"): MPS caps the job's memory
// on each device, named by the ordinal its CUDA enumerates (its place in
// CUDA_VISIBLE_DEVICES); entries of 0 MiB (devices not shared) are left out.
std::string mps_pinned_device_mem_limit(const std::vector<long long>& mib);

// inherited: "NAME=value" entries (normally environ); OJS names in it are replaced,
// and CUDA_VISIBLE_DEVICES when the job has devices or job.gpus_managed.
std::vector<std::string> job_environment(const JobView& job, const JobWorkspace& workspace,
                                         const std::vector<std::string>& inherited);

std::vector<std::string> current_environment();

}  // namespace ojs::worker
