#include "worker/discovery/gpu_telemetry.hpp"

namespace ojs::worker {

using namespace nvml;

std::unique_ptr<GpuTelemetry> GpuTelemetry::open(const std::string& library, std::string* why) {
  auto t = std::unique_ptr<GpuTelemetry>(new GpuTelemetry(library));
  if (!t->lib_.loaded()) {
    if (why) *why = "dlopen " + library + " failed";
    return nullptr;
  }
  const auto init = t->lib_.symbol<InitFn>("nvmlInit_v2");
  t->shutdown_ = t->lib_.symbol<ShutdownFn>("nvmlShutdown");
  t->count_ = t->lib_.symbol<GetCountFn>("nvmlDeviceGetCount_v2");
  t->handle_ = t->lib_.symbol<GetHandleFn>("nvmlDeviceGetHandleByIndex_v2");
  t->memory_ = t->lib_.symbol<GetMemoryFn>("nvmlDeviceGetMemoryInfo");
  t->utilization_ = t->lib_.symbol<GetUtilizationFn>("nvmlDeviceGetUtilizationRates");
  t->temperature_ = t->lib_.symbol<GetTemperatureFn>("nvmlDeviceGetTemperature");
  t->power_ = t->lib_.symbol<GetPowerUsageFn>("nvmlDeviceGetPowerUsage");
  t->ecc_ = t->lib_.symbol<GetTotalEccErrorsFn>("nvmlDeviceGetTotalEccErrors");
  if (!init || !t->shutdown_ || !t->count_ || !t->handle_) {
    if (why) *why = library + " lacks a required NVML symbol";
    return nullptr;
  }
  if (const Return rc = init(); rc != SUCCESS) {
    if (why) *why = "nvmlInit_v2 failed with code " + std::to_string(rc);
    return nullptr;
  }
  return t;
}

GpuTelemetry::~GpuTelemetry() {
  if (shutdown_) shutdown_();
}

std::vector<GpuSample> GpuTelemetry::sample() const {
  std::vector<GpuSample> out;
  unsigned count = 0;
  if (count_(&count) != SUCCESS) return out;
  for (unsigned i = 0; i < count; ++i) {
    Device device = nullptr;
    if (handle_(i, &device) != SUCCESS) continue;  // a lost GPU: its XID said so
    GpuSample s;
    s.index = i;
    if (Utilization u{}; utilization_ && utilization_(device, &u) == SUCCESS) s.utilization_pct = u.gpu;
    if (Memory m{}; memory_ && memory_(device, &m) == SUCCESS) s.memory_used_gb = static_cast<double>(m.used) / 1e9;
    if (unsigned t = 0; temperature_ && temperature_(device, TEMPERATURE_GPU, &t) == SUCCESS) s.temperature_c = t;
    if (unsigned mw = 0; power_ && power_(device, &mw) == SUCCESS) s.power_w = mw / 1000.0;
    if (unsigned long long e = 0; ecc_ && ecc_(device, MEMORY_ERROR_TYPE_UNCORRECTED, VOLATILE_ECC, &e) == SUCCESS) s.ecc_uncorrected = e;
    out.push_back(s);
  }
  return out;
}

}  // namespace ojs::worker
