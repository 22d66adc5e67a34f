// Watches NVML for XID critical errors on a thread of its own and posts the
// faults that make a GPU unusable and the warnings (see xid_policy) to a DeviceFaults board,
// which the agent loop drains each turn: the thread never touches agent state.
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace ojs::worker {

struct DeviceFault {
  unsigned gpu_index = 0;        // NVML index of the physical GPU
  unsigned long long xid = 0;
  std::string reason;            // "xid 79: GPU has fallen off the bus"
  bool fatal = true;             // XidAction::unhealthy; false: a warning, counted (XidAction::warn)
};

// The hand-off between the event thread and the agent loop.
class DeviceFaults {
 public:
  void post(DeviceFault fault) {
    std::lock_guard lock(mutex_);
    pending_.push_back(std::move(fault));
  }
  std::vector<DeviceFault> take() {
    std::lock_guard lock(mutex_);
    return std::exchange(pending_, {});
  }

 private:
  std::mutex mutex_;
  std::vector<DeviceFault> pending_;
};

class XidWatcher {
 public:
  // Opens its own handle on the library and registers every GPU for XID
  // events. Null (and *why set) when NVML or its event API is unusable.
  static std::unique_ptr<XidWatcher> start(const std::string& library_name, DeviceFaults& faults, std::string* why);
  ~XidWatcher();  // stops and joins the thread, frees the event set, shuts NVML down
  XidWatcher(const XidWatcher&) = delete;
  XidWatcher& operator=(const XidWatcher&) = delete;

  unsigned watched_gpus() const { return watched_; }

 private:
  struct Session;
  explicit XidWatcher(std::unique_ptr<Session> session, DeviceFaults& faults);
  void run();

  std::unique_ptr<Session> session_;
  DeviceFaults& faults_;
  unsigned watched_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace ojs::worker
