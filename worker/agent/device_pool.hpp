// GPU indices held by running jobs. The broker picks the devices; the agent
// refuses a job whose devices are still busy here rather than share a GPU.
#pragma once
#include <set>
#include <vector>

namespace ojs::worker {

class DevicePool {
 public:
  // All or nothing: false (and nothing claimed) when any device is busy.
  bool try_claim(const std::vector<int>& devices) {
    for (const int d : devices)
      if (busy_.count(d)) return false;
    busy_.insert(devices.begin(), devices.end());
    return true;
  }
  void release(const std::vector<int>& devices) {
    for (const int d : devices) busy_.erase(d);
  }
  bool in_use(int device) const { return busy_.count(device) > 0; }

 private:
  std::set<int> busy_;
};

}  // namespace ojs::worker
