#include "worker/discovery/xid_watcher.hpp"

#include "worker/discovery/nvml_api.hpp"
#include "worker/discovery/xid_policy.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

namespace ojs::worker {

using namespace nvml;

// The library, NVML initialised (NVML counts nvmlInit calls, so this session
// and discovery's do not interfere), the event set and the handle of each GPU.
struct XidWatcher::Session {
  explicit Session(const std::string& name) : lib(name) {}
  ~Session() {
    if (set && free_set) free_set(set);
    if (initialised && shutdown) shutdown();
  }
  DynamicLibrary lib;
  ShutdownFn shutdown = nullptr;
  EventSetWaitFn wait = nullptr;
  EventSetFreeFn free_set = nullptr;
  EventSet set = nullptr;
  bool initialised = false;
  std::vector<Device> gpus;  // by NVML index
};

std::unique_ptr<XidWatcher> XidWatcher::start(const std::string& library_name, DeviceFaults& faults, std::string* why) {
  auto fail = [&](std::string reason) -> std::unique_ptr<XidWatcher> {
    if (why) *why = std::move(reason);
    return nullptr;
  };
  auto session = std::make_unique<Session>(library_name);
  if (!session->lib.loaded()) return fail("dlopen " + library_name + " failed");
  auto init = session->lib.symbol<InitFn>("nvmlInit_v2");
  auto get_count = session->lib.symbol<GetCountFn>("nvmlDeviceGetCount_v2");
  auto get_handle = session->lib.symbol<GetHandleFn>("nvmlDeviceGetHandleByIndex_v2");
  auto create = session->lib.symbol<EventSetCreateFn>("nvmlEventSetCreate");
  auto register_events = session->lib.symbol<RegisterEventsFn>("nvmlDeviceRegisterEvents");
  session->shutdown = session->lib.symbol<ShutdownFn>("nvmlShutdown");
  session->wait = session->lib.symbol<EventSetWaitFn>("nvmlEventSetWait_v2");
  session->free_set = session->lib.symbol<EventSetFreeFn>("nvmlEventSetFree");
  if (!init || !get_count || !get_handle || !create || !register_events || !session->shutdown || !session->wait ||
      !session->free_set)
    return fail(library_name + " lacks the NVML event API");
  if (const Return rc = init(); rc != SUCCESS) return fail("nvmlInit_v2 failed with code " + std::to_string(rc));
  session->initialised = true;
  if (const Return rc = create(&session->set); rc != SUCCESS)
    return fail("nvmlEventSetCreate failed with code " + std::to_string(rc));
  unsigned count = 0;
  if (get_count(&count) != SUCCESS) count = 0;
  unsigned watched = 0;
  for (unsigned i = 0; i < count; ++i) {
    Device device = nullptr;
    if (get_handle(i, &device) != SUCCESS) device = nullptr;
    session->gpus.push_back(device);
    // Devices that cannot report XIDs (NOT_SUPPORTED on some boards) are still used.
    if (device && register_events(device, EVENT_TYPE_XID_CRITICAL_ERROR, session->set) == SUCCESS) ++watched;
    else spdlog::warn("discovery: GPU {} cannot report XID events; its faults will not be seen", i);
  }
  if (watched == 0) return fail("no GPU reports XID events");
  std::unique_ptr<XidWatcher> watcher(new XidWatcher(std::move(session), faults));
  watcher->watched_ = watched;
  watcher->thread_ = std::thread([w = watcher.get()] { w->run(); });
  return watcher;
}

XidWatcher::XidWatcher(std::unique_ptr<Session> session, DeviceFaults& faults)
    : session_(std::move(session)), faults_(faults) {}

XidWatcher::~XidWatcher() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void XidWatcher::run() {
  // A short wait keeps shutdown prompt; the driver queues events meanwhile.
  constexpr unsigned kWaitMs = 500;
  Return last_error = SUCCESS;
  while (!stop_) {
    EventData event{};
    const Return rc = session_->wait(session_->set, &event, kWaitMs);
    if (rc == ERROR_TIMEOUT) continue;
    if (rc != SUCCESS) {
      // E.g. GPU_IS_LOST after an XID 79: keep watching the other GPUs, log each new code once.
      if (rc != last_error) spdlog::warn("nvmlEventSetWait_v2 failed with code {}; retrying", rc);
      last_error = rc;
      std::this_thread::sleep_for(std::chrono::milliseconds(kWaitMs));
      continue;
    }
    last_error = SUCCESS;
    if (event.eventType != EVENT_TYPE_XID_CRITICAL_ERROR) continue;
    const auto gpu = std::find(session_->gpus.begin(), session_->gpus.end(), event.device);
    if (gpu == session_->gpus.end()) {
      spdlog::warn("XID {} on a device NVML did not enumerate; ignored", event.eventData);
      continue;
    }
    const auto index = static_cast<unsigned>(gpu - session_->gpus.begin());
    const auto verdict = classify_xid(event.eventData);
    switch (verdict.action) {
      case XidAction::ignore:
        spdlog::info("GPU {} {} (no action)", index, xid_reason(event.eventData));
        break;
      case XidAction::warn:
        spdlog::warn("GPU {} {}", index, xid_reason(event.eventData));
        faults_.post({index, event.eventData, xid_reason(event.eventData), false});
        break;
      case XidAction::unhealthy:
        faults_.post({index, event.eventData, xid_reason(event.eventData)});
        break;
    }
  }
}

}  // namespace ojs::worker
