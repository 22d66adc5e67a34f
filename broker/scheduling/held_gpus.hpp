// GPUs held on a worker, as a hypothetical load: phantom jobs that keep them busy
// for a class that may not use them. FETCH's capacity guards judge a held worker
// by it; the preemption plans and bench/simulator use the same arithmetic.
#pragma once
#include <string>
#include <vector>

#include "broker/scheduling/running_job.hpp"
#include "ojs/ml/capabilities.hpp"
#include "ojs/ml/worker_load.hpp"

namespace ojs::broker {

// Adds a phantom job holding `gpus` GPUs (the given devices first, then free ones
// from the highest index) to a hypothetical load.
void add_phantom(ml::WorkerLoad& load, const ml::Capabilities& caps, const std::string& name, int gpus,
                 const std::vector<int>& devices);

// A worker held for a preemptor, as a class other than the preemptor's sees it (the
// FETCH guard `capacity_hold`, capacity_guard_filter.cpp, and bench/simulator):
// the GPUs of victims no longer running in `load` stay taken (add_phantom), and so do
// free GPUs up to `needed_gpus`, the preemptor's need (the victims' GPUs and the free ones
// the plan counted on; 0 for a hold written before it was kept: the victims' alone).
void hold_freed_gpus(ml::WorkerLoad& load, const ml::Capabilities& caps, const std::string& for_job,
                     const std::vector<RunningJob>& victims, int needed_gpus);

}  // namespace ojs::broker
