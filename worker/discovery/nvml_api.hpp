// The small slice of nvml.h the worker uses, declared here so there is no
// build-time dependency on the CUDA toolkit (layouts follow nvml.h of driver
// 450+), and the dlopen handle that owns the library. Shared by the one-shot
// inventory reader (nvml_loader) and the XID event thread (xid_watcher).
#pragma once
#include <dlfcn.h>

#include <string>

namespace ojs::worker::nvml {

using Return = int;
using Device = void*;
using EventSet = void*;
using EnableState = int;
constexpr Return SUCCESS = 0;
constexpr Return ERROR_NOT_FOUND = 6;
constexpr Return ERROR_TIMEOUT = 10;
constexpr unsigned NVLINK_MAX_LINKS = 18;
constexpr int MEMORY_ERROR_TYPE_UNCORRECTED = 1;
constexpr int VOLATILE_ECC = 0;
constexpr unsigned DEVICE_MIG_ENABLE = 1;
constexpr unsigned long long EVENT_TYPE_XID_CRITICAL_ERROR = 0x8;

struct Memory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct PciInfo {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
};

// nvmlDeviceAttributes_t: what a MIG device is made of (slices, SMs, memory).
struct DeviceAttributes {
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
  unsigned int gpuInstanceSliceCount;
  unsigned int computeInstanceSliceCount;
  unsigned long long memorySizeMB;
};

// nvmlUtilization_t: percent of the last sample period the GPU (memory) was busy.
struct Utilization {
  unsigned int gpu;
  unsigned int memory;
};
constexpr int TEMPERATURE_GPU = 0;  // nvmlTemperatureSensors_t NVML_TEMPERATURE_GPU

struct EventData {
  Device device;
  unsigned long long eventType;
  unsigned long long eventData;  // the XID for EVENT_TYPE_XID_CRITICAL_ERROR
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

using InitFn = Return (*)();
using ShutdownFn = Return (*)();
using GetCountFn = Return (*)(unsigned*);
using GetHandleFn = Return (*)(unsigned, Device*);
using GetStringFn = Return (*)(Device, char*, unsigned);
using GetMemoryFn = Return (*)(Device, Memory*);
using GetComputeCapabilityFn = Return (*)(Device, int*, int*);
using GetPciInfoFn = Return (*)(Device, PciInfo*);
using GetNvLinkStateFn = Return (*)(Device, unsigned, EnableState*);
using GetNvLinkRemotePciFn = Return (*)(Device, unsigned, PciInfo*);
using GetNvLinkRemoteTypeFn = Return (*)(Device, unsigned, int*);
using GetTotalEccErrorsFn = Return (*)(Device, int, int, unsigned long long*);
using GetRetiredPagesPendingFn = Return (*)(Device, EnableState*);
using GetComputeModeFn = Return (*)(Device, int*);
using GetMigModeFn = Return (*)(Device, unsigned*, unsigned*);
using GetMaxMigDeviceCountFn = Return (*)(Device, unsigned*);
using GetMigDeviceHandleFn = Return (*)(Device, unsigned, Device*);
using GetAttributesFn = Return (*)(Device, DeviceAttributes*);
using SystemGetStringFn = Return (*)(char*, unsigned);
using GetUtilizationFn = Return (*)(Device, Utilization*);
using GetTemperatureFn = Return (*)(Device, int, unsigned*);
using GetPowerUsageFn = Return (*)(Device, unsigned*);  // milliwatts
using SystemGetCudaVersionFn = Return (*)(int*);
using EventSetCreateFn = Return (*)(EventSet*);
using RegisterEventsFn = Return (*)(Device, unsigned long long, EventSet);
using EventSetWaitFn = Return (*)(EventSet, EventData*, unsigned);
using EventSetFreeFn = Return (*)(EventSet);

// Closes the library when its owner is done, whatever path it leaves by.
class DynamicLibrary {
 public:
  explicit DynamicLibrary(const std::string& name) : handle_(dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) {}
  ~DynamicLibrary() {
    if (handle_) dlclose(handle_);
  }
  DynamicLibrary(const DynamicLibrary&) = delete;
  DynamicLibrary& operator=(const DynamicLibrary&) = delete;

  bool loaded() const { return handle_ != nullptr; }
  template <typename Fn>
  Fn symbol(const char* name) const {
    return reinterpret_cast<Fn>(dlsym(handle_, name));
  }

 private:
  void* handle_;
};

}  // namespace ojs::worker::nvml
