// What each GPU is doing now, read from NVML every few seconds while the agent
// runs: utilisation, memory in use, temperature, power, uncorrected ECC errors. The
// agent advertises it with its devices (so the broker exports it in /metrics) and
// takes a device above the configured temperature out of placement until it cools.
// The library is opened once (dlopen, as discovery does); a value NVML does not
// give is left out.
#pragma once
#include "worker/discovery/nvml_api.hpp"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ojs::worker {

struct GpuSample {
  unsigned index = 0;  // NVML index (a MIG device's GPU)
  std::optional<unsigned> utilization_pct;
  std::optional<double> memory_used_gb;  // decimal GB, as the advertisement's memory_gb
  std::optional<unsigned> temperature_c;
  std::optional<double> power_w;
  std::optional<unsigned long long> ecc_uncorrected;  // volatile: since the driver loaded
};

class GpuTelemetry {
 public:
  // nullptr (and *why says why) when the library or nvmlInit is not there.
  static std::unique_ptr<GpuTelemetry> open(const std::string& library, std::string* why);
  ~GpuTelemetry();
  GpuTelemetry(const GpuTelemetry&) = delete;
  GpuTelemetry& operator=(const GpuTelemetry&) = delete;
  std::vector<GpuSample> sample() const;

 private:
  explicit GpuTelemetry(const std::string& library) : lib_(library) {}
  nvml::DynamicLibrary lib_;
  nvml::ShutdownFn shutdown_ = nullptr;
  nvml::GetCountFn count_ = nullptr;
  nvml::GetHandleFn handle_ = nullptr;
  nvml::GetMemoryFn memory_ = nullptr;
  nvml::GetUtilizationFn utilization_ = nullptr;
  nvml::GetTemperatureFn temperature_ = nullptr;
  nvml::GetPowerUsageFn power_ = nullptr;
  nvml::GetTotalEccErrorsFn ecc_ = nullptr;
};

}  // namespace ojs::worker
