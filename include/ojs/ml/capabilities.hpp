// What a worker says it has, sent as `capabilities` in FETCH and heartbeat bodies.
// Parsed once per request; its fingerprint keys the memo of class judgements.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string>
#include <vector>

#include "ojs/ml/types.hpp"

namespace ojs::ml {

struct GpuDevice {
  int index = 0;
  std::string uuid;
  std::string type;  // lowercase; empty: same as the worker's gpu.type
  double memory_gb = 0;
  std::optional<ComputeCapability> compute_capability;
  int numa_node = -1;  // -1: unknown
  std::vector<int> nvlink_peers;
  bool healthy = true;
  std::string health_reason;  // why it is unhealthy ("xid 79: GPU has fallen off the bus"); not matched on
  // A MIG device (a slice of a physical GPU): its profile ("1g.10gb"), the
  // physical GPU's index, and its share of that GPU's compute (1/7 for 1g on
  // an H100). memory_gb is the slice's own memory. Whole GPUs: "", -1, 1.
  std::string mig_profile;
  int parent_index = -1;
  double compute_fraction = 1;
  bool is_mig() const { return parent_index >= 0; }
  // "exclusive" (one job at a time, the default) or "mps": shared through the
  // CUDA Multi-Process Service by up to max_jobs jobs, each limited to
  // mps_active_thread_percentage of the SMs.
  std::string sharing = "exclusive";
  int mps_active_thread_percentage = 100;
  int max_jobs = 1;
  bool operator==(const GpuDevice&) const = default;
};

struct GpuCapability {
  std::string type;  // lowercase
  int count = 0;
  double memory_gb = 0;  // per device (the smallest when devices differ)
  std::optional<ComputeCapability> compute_capability;  // the lowest among devices
  std::string interconnect;  // "nvlink", "pcie" or empty (unknown)
  bool operator==(const GpuCapability&) const = default;
};

struct TpuCapability {
  std::string type;
  std::string topology;
  int chip_count = 0;
  bool operator==(const TpuCapability&) const = default;
};

struct LoadedModel {
  std::string model_id;
  std::string model_version;
  std::string model_format;
  bool operator==(const LoadedModel&) const = default;
};

struct Capabilities {
  Accelerator accelerator = Accelerator::cpu;  // explicit, else inferred from gpu/tpu
  GpuCapability gpu;
  TpuCapability tpu;
  std::optional<int> cpu_cores;
  std::optional<double> memory_gb;
  std::optional<double> storage_gb;
  std::optional<double> shm_size_gb;
  std::vector<LoadedModel> models_loaded;
  std::vector<std::string> runtimes;       // sorted
  std::vector<std::string> model_formats;  // sorted; formats the worker can load
  // The worker's labels plus labels derived from its hardware ("accelerator",
  // "gpu_type", "gpu_count", "gpu_memory_gb", ...) unless it set them itself,
  // so selectors like {"gpu_type": "nvidia-a100"} work without duplication.
  Labels labels;
  std::vector<GpuDevice> devices;  // optional per-device inventory, sorted by index
  bool operator==(const Capabilities&) const = default;

  bool has_model(std::string_view id, std::string_view version = {}) const;
};

// What one worker id may store (FETCH and heartbeat keep the document as sent, and
// GET /ojs/v1/admin/workers returns it): at most kMaxCapabilitiesBytes of compact
// JSON, at most kMaxCapabilityItems entries in each list (devices, models_loaded,
// runtimes, model_formats) and labels. A real 8-GPU node with MIG slices and a
// few hundred models sends a few KiB. Throws ojs::invalid_field naming the field.
inline constexpr std::size_t kMaxCapabilitiesBytes = 64 * 1024;
inline constexpr std::size_t kMaxCapabilityItems = 256;
void require_bounded_capabilities(const nlohmann::json& body, std::size_t json_bytes);

// Throws ojs::invalid_field with paths such as "capabilities.gpu.count" and rules
// such as "must be an integer >= 0".
Capabilities parse_capabilities(const nlohmann::json& body);

// Canonical JSON of everything matching depends on (sorted, normalised).
nlohmann::json capabilities_to_json(const Capabilities& caps);

// 16 hex chars of SHA-256 over capabilities_to_json. Excludes what changes per
// fetch (busy devices, active jobs: they come in WorkerLoad), so two fetches of an
// unchanged worker share a fingerprint and reuse memoised class judgements.
std::string fingerprint(const Capabilities& caps);

// The devices a worker advertises as unhealthy, for read models (admin workers,
// status page): [{index, uuid, mig_profile?, reason}]. Tolerant: capabilities
// that do not parse give an empty list.
nlohmann::json unhealthy_devices(const nlohmann::json& capabilities);

}  // namespace ojs::ml
