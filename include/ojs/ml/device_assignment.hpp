// Choosing which GPUs of a worker a job gets: all or none, never an unhealthy or
// busy device, an NVLink clique when the job asks for nvlink, one NUMA node when
// possible, packed onto partly used NUMA nodes (or spread) as configured, and
// the smallest MIG device that fits before a bigger one or a whole GPU.
#pragma once
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ojs/ml/capabilities.hpp"
#include "ojs/ml/requirements.hpp"
#include "ojs/ml/worker_load.hpp"

namespace ojs::ml {

enum class PlacementPolicy {
  pack,   // fill the NUMA node with the fewest free GPUs that still fits: keeps big holes
  spread  // use the NUMA node with the most free GPUs: spreads heat and memory traffic
};

struct AssignmentOptions {
  PlacementPolicy policy = PlacementPolicy::pack;
};

struct DeviceAssignment {
  std::vector<int> indices;  // ascending; empty on refusal
  std::string refusal;       // "insufficient free GPUs: 4 free, job needs 8"
  int free_matching = 0;     // free healthy devices that meet type/memory/cc
  bool ok() const { return refusal.empty(); }
};

DeviceAssignment assign_devices(const std::vector<GpuDevice>& devices, const std::set<int>& busy,
                                const GpuRequirement& need, const AssignmentOptions& options = {});

// Does this device meet the per-device parts of the requirement (type, memory, cc)?
// (parse_capabilities fills a device's missing type / cc from the worker's gpu{}.)
// A MIG device takes only single-GPU jobs: a CUDA process sees one MIG device.
bool device_meets(const GpuDevice& d, const GpuRequirement& need);

// The memory a job takes on a shared device: what it declared, else the device's
// fair share (its memory / max_jobs), so jobs that declare nothing still never
// sum to more than the device has.
double memory_charge_gb(const GpuDevice& d, std::optional<double> declared_gb);

// GPU memory budgets count whole megabytes (decimal: devices advertise decimal GB),
// so Lua adds integers: the one conversion each way.
long long gpu_memory_mb(double gb);
double gpu_memory_gb(long long mb);

// The GPU memory a job holds once placed on `assigned`, as a queue's memory budget
// charges it (max_total_gpu_memory_gb): a whole GPU all of its memory, a MIG slice
// its own, an MPS-shared device memory_charge_gb. Without a device list (a worker
// that gives a count only) the job's declared memory per GPU times `count`, else 0.
long long gpu_memory_charge_mb(const std::vector<GpuDevice>& devices, const std::vector<int>& assigned,
                               std::optional<double> declared_gb, int count);

// The devices a job needing `need` cannot get now: held by an active job, except
// an MPS-shared device that holds fewer than its max_jobs (counted in
// load.device_jobs; a busy device without a count stays busy) and whose memory
// still has room for the job's charge beside the charges of the jobs on it (a MIG
// device counts its own memory). 0% oversubscription: never more than memory_gb.
// Drained devices (load.drained_devices) are never available.
std::set<int> unavailable_devices(const std::vector<GpuDevice>& devices, const WorkerLoad& load,
                                  const GpuRequirement& need);

// Why a refusal is not "busy": the shared devices that meet the job and have a free
// job slot, but not the memory for its charge beside the jobs on them. Said as
// "device 0 is shared (1 of 2 jobs) and has 21.5 of 85.5 GB left, job needs 64 GB";
// empty when no device is short of memory only.
std::string shared_memory_shortfall(const std::vector<GpuDevice>& devices, const WorkerLoad& load,
                                    const GpuRequirement& need);

// What CUDA_VISIBLE_DEVICES carries for assigned devices: the MIG UUID of a
// MIG device (CUDA addresses MIG devices only by UUID), else the index.
std::vector<std::string> visible_device_ids(const std::vector<GpuDevice>& devices, const std::vector<int>& assigned);

}  // namespace ojs::ml
