#include "worker/discovery/nvml_loader.hpp"

#include "worker/discovery/nvml_api.hpp"

#include <algorithm>

namespace ojs::worker {

namespace {

using namespace nvml;

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
  GetComputeModeFn get_compute_mode = nullptr;              // optional
  GetMigModeFn get_mig_mode = nullptr;                      // optional: pre-Ampere drivers lack the MIG calls
  GetMaxMigDeviceCountFn get_max_mig_devices = nullptr;
  GetMigDeviceHandleFn get_mig_handle = nullptr;
  GetAttributesFn get_attributes = nullptr;

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
        get_retired_pages_pending(lib.symbol<GetRetiredPagesPendingFn>("nvmlDeviceGetRetiredPagesPendingStatus")),
        get_compute_mode(lib.symbol<GetComputeModeFn>("nvmlDeviceGetComputeMode")),
        get_mig_mode(lib.symbol<GetMigModeFn>("nvmlDeviceGetMigMode")),
        get_max_mig_devices(lib.symbol<GetMaxMigDeviceCountFn>("nvmlDeviceGetMaxMigDeviceCount")),
        get_mig_handle(lib.symbol<GetMigDeviceHandleFn>("nvmlDeviceGetMigDeviceHandleByIndex")),
        get_attributes(lib.symbol<GetAttributesFn>("nvmlDeviceGetAttributes_v2")) {}

  bool has_mig() const { return get_mig_mode && get_max_mig_devices && get_mig_handle; }

  bool has_required() const {
    return get_handle && get_name && get_uuid && get_memory && get_compute_capability && get_pci_info;
  }
};

std::vector<RecordedNvLink> read_nvlinks(const NvmlApi& api, Device device) {
  std::vector<RecordedNvLink> links;
  if (!api.get_nvlink_state || !api.get_nvlink_remote_pci) return links;
  for (unsigned link = 0; link < NVLINK_MAX_LINKS; ++link) {
    EnableState active = 0;
    // Devices without NVLink answer NOT_SUPPORTED on link 0: stop there.
    if (api.get_nvlink_state(device, link, &active) != SUCCESS) break;
    RecordedNvLink recorded;
    recorded.link = link;
    recorded.active = active != 0;
    if (recorded.active) {
      PciInfo remote{};
      if (api.get_nvlink_remote_pci(device, link, &remote) == SUCCESS) recorded.remote_pci_bus_id = remote.busId;
      int remote_type = 0xFF;
      if (api.get_nvlink_remote_type && api.get_nvlink_remote_type(device, link, &remote_type) == SUCCESS)
        recorded.remote_device_type = remote_type_name(remote_type);
      else
        recorded.remote_device_type = "unknown";
    }
    links.push_back(std::move(recorded));
  }
  return links;
}

// The MIG devices of a MIG-enabled GPU. Slots without an instance answer
// NOT_FOUND and are skipped; the slot number stays the device's index.
void read_mig(const NvmlApi& api, Device device, RecordedGpu& gpu) {
  if (!api.has_mig()) return;
  unsigned current = 0, pending = 0;
  if (api.get_mig_mode(device, &current, &pending) != SUCCESS) return;  // NOT_SUPPORTED: no MIG on this GPU
  gpu.mig_supported = true;
  gpu.mig_pending_enabled = pending == DEVICE_MIG_ENABLE;
  if (current != DEVICE_MIG_ENABLE) return;
  gpu.mig_enabled = true;
  if (api.get_max_mig_devices(device, &gpu.max_mig_devices) != SUCCESS) return;
  for (unsigned slot = 0; slot < gpu.max_mig_devices; ++slot) {
    Device mig = nullptr;
    if (api.get_mig_handle(device, slot, &mig) != SUCCESS) continue;
    RecordedMigDevice instance;
    instance.index = slot;
    char uuid[96] = {};
    if (api.get_uuid(mig, uuid, sizeof uuid) == SUCCESS) instance.uuid = uuid;
    else instance.query_failed = true;
    Memory memory{};
    DeviceAttributes attributes{};
    const bool have_attributes = api.get_attributes && api.get_attributes(mig, &attributes) == SUCCESS;
    if (have_attributes) {
      instance.gpu_instance_slice_count = attributes.gpuInstanceSliceCount;
      instance.compute_instance_slice_count = attributes.computeInstanceSliceCount;
      instance.multiprocessor_count = attributes.multiprocessorCount;
    }
    if (api.get_memory(mig, &memory) == SUCCESS) instance.memory_total_bytes = memory.total;
    else if (have_attributes) instance.memory_total_bytes = attributes.memorySizeMB << 20;
    else instance.query_failed = true;
    gpu.mig_devices.push_back(std::move(instance));
  }
}

RecordedGpu read_gpu(const NvmlApi& api, unsigned index) {
  RecordedGpu gpu;
  gpu.index = index;
  Device device = nullptr;
  if (api.get_handle(index, &device) != SUCCESS) {
    gpu.query_failed = true;  // e.g. NVML_ERROR_GPU_IS_LOST
    return gpu;
  }
  char text[96] = {};
  if (api.get_name(device, text, sizeof text) == SUCCESS) gpu.name = text;
  char uuid[96] = {};
  if (api.get_uuid(device, uuid, sizeof uuid) == SUCCESS) gpu.uuid = uuid;
  Memory memory{};
  if (api.get_memory(device, &memory) == SUCCESS)
    gpu.memory_total_bytes = memory.total;
  else
    gpu.query_failed = true;
  if (api.get_compute_capability(device, &gpu.cuda_compute_capability[0], &gpu.cuda_compute_capability[1]) != SUCCESS) gpu.query_failed = true;
  PciInfo pci{};
  if (api.get_pci_info(device, &pci) == SUCCESS) gpu.pci_bus_id = pci.busId;
  gpu.nvlinks = read_nvlinks(api, device);
  unsigned long long ecc = 0;
  if (api.get_total_ecc_errors &&
      api.get_total_ecc_errors(device, MEMORY_ERROR_TYPE_UNCORRECTED, VOLATILE_ECC, &ecc) == SUCCESS)
    gpu.ecc_uncorrected_volatile = static_cast<std::int64_t>(ecc);
  EnableState pending = 0;
  if (api.get_retired_pages_pending && api.get_retired_pages_pending(device, &pending) == SUCCESS)
    gpu.retired_pages_pending = pending != 0;
  if (api.get_compute_mode) api.get_compute_mode(device, &gpu.compute_mode);
  read_mig(api, device, gpu);
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
  if (const Return rc = init(); rc != SUCCESS) {
    result.unavailable_reason = "nvmlInit_v2 failed with code " + std::to_string(rc);
    return result;
  }
  RecordedGpuInventory inventory;
  char driver[80] = {};
  if (auto fn = lib.symbol<SystemGetStringFn>("nvmlSystemGetDriverVersion"); fn && fn(driver, sizeof driver) == SUCCESS)
    inventory.driver_version = driver;
  if (auto fn = lib.symbol<SystemGetCudaVersionFn>("nvmlSystemGetCudaDriverVersion"))
    fn(&inventory.cuda_driver_version);
  unsigned count = 0;
  if (get_count(&count) == SUCCESS)
    for (unsigned i = 0; i < count; ++i) inventory.gpus.push_back(read_gpu(api, i));
  shutdown();
  result.inventory = std::move(inventory);
  return result;
}

}  // namespace ojs::worker
