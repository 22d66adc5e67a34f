#include "worker/discovery/nvml_loader.hpp"

#include <dlfcn.h>

namespace ojs::worker {

namespace {

// The small slice of nvml.h we use, declared here so there is no build-time
// dependency on the CUDA toolkit. Layouts follow nvml.h of driver 450+.
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
using nvmlEnableState_t = int;
constexpr nvmlReturn_t NVML_SUCCESS = 0;
constexpr unsigned NVML_NVLINK_MAX_LINKS = 18;
constexpr int NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1;
constexpr int NVML_VOLATILE_ECC = 0;

struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
};

using InitFn = nvmlReturn_t (*)();
using ShutdownFn = nvmlReturn_t (*)();
using GetCountFn = nvmlReturn_t (*)(unsigned*);
using GetHandleFn = nvmlReturn_t (*)(unsigned, nvmlDevice_t*);
using GetStringFn = nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned);
using GetMemoryFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*);
using GetComputeCapabilityFn = nvmlReturn_t (*)(nvmlDevice_t, int*, int*);
using GetPciInfoFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlPciInfo_t*);
using GetNvLinkStateFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned, nvmlEnableState_t*);
using GetNvLinkRemotePciFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned, nvmlPciInfo_t*);
using GetNvLinkRemoteTypeFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned, int*);
using GetTotalEccErrorsFn = nvmlReturn_t (*)(nvmlDevice_t, int, int, unsigned long long*);
using GetRetiredPagesPendingFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlEnableState_t*);
using SystemGetStringFn = nvmlReturn_t (*)(char*, unsigned);
using SystemGetCudaVersionFn = nvmlReturn_t (*)(int*);

// Closes the library when discovery is done, whatever path it leaves by.
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

const char* remote_type_name(int type) {
  switch (type) {
    case 0: return "gpu";
    case 1: return "ibmnpu";
    case 2: return "switch";
    default: return "unknown";
  }
}

struct NvmlApi {
  GetHandleFn get_handle = nullptr;
  GetStringFn get_name = nullptr;
  GetStringFn get_uuid = nullptr;
  GetMemoryFn get_memory = nullptr;
  GetComputeCapabilityFn get_compute_capability = nullptr;
  GetPciInfoFn get_pci_info = nullptr;
  GetNvLinkStateFn get_nvlink_state = nullptr;
  GetNvLinkRemotePciFn get_nvlink_remote_pci = nullptr;
  GetNvLinkRemoteTypeFn get_nvlink_remote_type = nullptr;   // optional: older drivers lack it
  GetTotalEccErrorsFn get_total_ecc_errors = nullptr;       // optional
  GetRetiredPagesPendingFn get_retired_pages_pending = nullptr;  // optional

  explicit NvmlApi(const DynamicLibrary& lib)
      : get_handle(lib.symbol<GetHandleFn>("nvmlDeviceGetHandleByIndex_v2")),
        get_name(lib.symbol<GetStringFn>("nvmlDeviceGetName")),
        get_uuid(lib.symbol<GetStringFn>("nvmlDeviceGetUUID")),
        get_memory(lib.symbol<GetMemoryFn>("nvmlDeviceGetMemoryInfo")),
        get_compute_capability(lib.symbol<GetComputeCapabilityFn>("nvmlDeviceGetCudaComputeCapability")),
        get_pci_info(lib.symbol<GetPciInfoFn>("nvmlDeviceGetPciInfo_v3")),
        get_nvlink_state(lib.symbol<GetNvLinkStateFn>("nvmlDeviceGetNvLinkState")),
        get_nvlink_remote_pci(lib.symbol<GetNvLinkRemotePciFn>("nvmlDeviceGetNvLinkRemotePciInfo_v2")),
        get_nvlink_remote_type(lib.symbol<GetNvLinkRemoteTypeFn>("nvmlDeviceGetNvLinkRemoteDeviceType")),
        get_total_ecc_errors(lib.symbol<GetTotalEccErrorsFn>("nvmlDeviceGetTotalEccErrors")),
        get_retired_pages_pending(lib.symbol<GetRetiredPagesPendingFn>("nvmlDeviceGetRetiredPagesPendingStatus")) {}

  bool has_required() const {
    return get_handle && get_name && get_uuid && get_memory && get_compute_capability && get_pci_info;
  }
};

std::vector<RecordedNvLink> read_nvlinks(const NvmlApi& api, nvmlDevice_t device) {
  std::vector<RecordedNvLink> links;
  if (!api.get_nvlink_state || !api.get_nvlink_remote_pci) return links;
  for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
    nvmlEnableState_t active = 0;
    // Devices without NVLink answer NOT_SUPPORTED on link 0: stop there.
    if (api.get_nvlink_state(device, link, &active) != NVML_SUCCESS) break;
    RecordedNvLink recorded;
    recorded.link = link;
    recorded.active = active != 0;
    if (recorded.active) {
      nvmlPciInfo_t remote{};
      if (api.get_nvlink_remote_pci(device, link, &remote) == NVML_SUCCESS) recorded.remote_pci_bus_id = remote.busId;
      int remote_type = 0xFF;
      if (api.get_nvlink_remote_type && api.get_nvlink_remote_type(device, link, &remote_type) == NVML_SUCCESS)
        recorded.remote_device_type = remote_type_name(remote_type);
      else
        recorded.remote_device_type = "unknown";
    }
    links.push_back(std::move(recorded));
  }
  return links;
}

RecordedGpu read_gpu(const NvmlApi& api, unsigned index) {
  RecordedGpu gpu;
  gpu.index = index;
  nvmlDevice_t device = nullptr;
  if (api.get_handle(index, &device) != NVML_SUCCESS) {
    gpu.query_failed = true;  // e.g. NVML_ERROR_GPU_IS_LOST
    return gpu;
  }
  char text[96] = {};
  if (api.get_name(device, text, sizeof text) == NVML_SUCCESS) gpu.name = text;
  char uuid[96] = {};
  if (api.get_uuid(device, uuid, sizeof uuid) == NVML_SUCCESS) gpu.uuid = uuid;
  nvmlMemory_t memory{};
  if (api.get_memory(device, &memory) == NVML_SUCCESS)
    gpu.memory_total_bytes = memory.total;
  else
    gpu.query_failed = true;
  if (api.get_compute_capability(device, &gpu.cuda_compute_capability[0], &gpu.cuda_compute_capability[1]) != NVML_SUCCESS) gpu.query_failed = true;
  nvmlPciInfo_t pci{};
  if (api.get_pci_info(device, &pci) == NVML_SUCCESS) gpu.pci_bus_id = pci.busId;
  gpu.nvlinks = read_nvlinks(api, device);
  unsigned long long ecc = 0;
  if (api.get_total_ecc_errors &&
      api.get_total_ecc_errors(device, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &ecc) == NVML_SUCCESS)
    gpu.ecc_uncorrected_volatile = static_cast<std::int64_t>(ecc);
  nvmlEnableState_t pending = 0;
  if (api.get_retired_pages_pending && api.get_retired_pages_pending(device, &pending) == NVML_SUCCESS)
    gpu.retired_pages_pending = pending != 0;
  return gpu;
}

}  // namespace

NvmlLoadResult load_nvml_inventory(const std::string& library_name) {
  NvmlLoadResult result;
  DynamicLibrary lib(library_name);
  if (!lib.loaded()) {
    result.unavailable_reason = std::string("dlopen ") + library_name + ": " + dlerror();
    return result;
  }
  auto init = lib.symbol<InitFn>("nvmlInit_v2");
  auto shutdown = lib.symbol<ShutdownFn>("nvmlShutdown");
  auto get_count = lib.symbol<GetCountFn>("nvmlDeviceGetCount_v2");
  const NvmlApi api(lib);
  if (!init || !shutdown || !get_count || !api.has_required()) {
    result.unavailable_reason = library_name + " lacks a required NVML symbol";
    return result;
  }
  if (const nvmlReturn_t rc = init(); rc != NVML_SUCCESS) {
    result.unavailable_reason = "nvmlInit_v2 failed with code " + std::to_string(rc);
    return result;
  }
  RecordedGpuInventory inventory;
  char driver[80] = {};
  if (auto fn = lib.symbol<SystemGetStringFn>("nvmlSystemGetDriverVersion"); fn && fn(driver, sizeof driver) == NVML_SUCCESS)
    inventory.driver_version = driver;
  if (auto fn = lib.symbol<SystemGetCudaVersionFn>("nvmlSystemGetCudaDriverVersion"))
    fn(&inventory.cuda_driver_version);
  unsigned count = 0;
  if (get_count(&count) == NVML_SUCCESS)
    for (unsigned i = 0; i < count; ++i) inventory.gpus.push_back(read_gpu(api, i));
  shutdown();
  result.inventory = std::move(inventory);
  return result;
}

}  // namespace ojs::worker
