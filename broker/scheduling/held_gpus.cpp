// GPUs held as phantom jobs in a hypothetical load (pure).
#include "broker/scheduling/held_gpus.hpp"

#include <algorithm>

namespace ojs::broker {

void add_phantom(ml::WorkerLoad& load, const ml::Capabilities& caps, const std::string& name, int gpus,
                 const std::vector<int>& devices) {
  if (gpus <= 0) return;
  load.active.push_back({name, gpus, {}, {}, std::nullopt});  // busy without a count: no memory share
  int taken = 0;
  for (int d : devices)
    if (taken < gpus && load.busy_devices.insert(d).second) ++taken;
  for (auto it = caps.devices.rbegin(); it != caps.devices.rend() && taken < gpus; ++it)
    if (load.busy_devices.insert(it->index).second) ++taken;
}

void hold_freed_gpus(ml::WorkerLoad& load, const ml::Capabilities& caps, const std::string& for_job,
                     const std::vector<RunningJob>& victims, int needed_gpus) {
  int held = 0;  // the victims' GPUs: still running (busy in the load) or freed (held here)
  for (const auto& victim : victims) {
    const bool running = std::any_of(load.active.begin(), load.active.end(), [&](const ml::ActiveJob& a) { return a.job_id == victim.job_id; });
    if (!running) add_phantom(load, caps, "hold:" + for_job, victim.gpus, victim.devices);
    held += victim.gpus;
  }
  add_phantom(load, caps, "hold:" + for_job, needed_gpus - held, {});  // the free GPUs it counted on
}

}  // namespace ojs::broker
