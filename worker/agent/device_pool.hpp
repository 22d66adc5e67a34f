// GPU indices held by running jobs, and the ones an XID took out of service.
// The broker picks the devices; the agent refuses a job whose devices are
// full here (or unhealthy since the broker last heard) rather than overload
// or use a broken GPU. A device takes one job (exclusive), or up to its
// max_jobs when it is shared through MPS.
#pragma once
#include <map>
#include <optional>
#include <set>
#include <vector>

namespace ojs::worker {

class DevicePool {
 public:
  void set_capacity(int device, int max_jobs) { capacity_[device] = max_jobs; }

  // All or nothing: false (and nothing claimed) when any device is full.
  bool try_claim(const std::vector<int>& devices) {
    for (const int d : devices)
      if (jobs_on(d) >= capacity(d)) return false;
    for (const int d : devices) ++jobs_[d];
    return true;
  }
  void release(const std::vector<int>& devices) {
    for (const int d : devices)
      if (auto it = jobs_.find(d); it != jobs_.end() && --it->second <= 0) jobs_.erase(it);
  }
  bool in_use(int device) const { return jobs_on(device) > 0; }

  // Unhealthy is for the life of the process: a GPU comes back after a reset,
  // and a reset means restarting the worker.
  void mark_unhealthy(int device) { unhealthy_.insert(device); }
  std::optional<int> first_unhealthy(const std::vector<int>& devices) const {
    for (const int d : devices)
      if (unhealthy_.count(d)) return d;
    return std::nullopt;
  }

 private:
  int jobs_on(int device) const {
    const auto it = jobs_.find(device);
    return it == jobs_.end() ? 0 : it->second;
  }
  int capacity(int device) const {
    const auto it = capacity_.find(device);
    return it == capacity_.end() ? 1 : it->second;
  }

  std::map<int, int> jobs_;      // device -> running jobs on it
  std::map<int, int> capacity_;  // device -> max jobs (absent: 1, exclusive)
  std::set<int> unhealthy_;
};

}  // namespace ojs::worker
