// What a job asks of the worker that runs it, read from the job document's
// ext_ml_* attributes (or the SDKs' meta.* encoding) and validated once, at PUSH.
//
// The struct separates three kinds of fields because the broker treats them
// differently: HARD constraints decide eligibility and define the requirement
// class; SOFT preferences only rank eligible workers; scheduling attributes
// drive preemption, checkpoints and timeouts and never affect matching.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ojs/ml/types.hpp"

namespace ojs::ml {

struct GpuRequirement {
  int count = 0;                          // 0: the job needs no GPU
  std::string type;                       // lowercase; empty: any model
  std::optional<double> memory_gb;        // per device minimum
  std::optional<ComputeCapability> min_compute_capability;  // max(explicit, precision-implied)
  Interconnect interconnect = Interconnect::any;  // forced to any when count == 1
  bool operator==(const GpuRequirement&) const = default;
};

struct TpuRequirement {
  std::string type;      // v4 v5e v5p v6e; empty: any
  std::string topology;  // "2x4", "4x4x4"; empty: any
  int chip_count = 0;    // 0: no TPU; set from the topology when only that is given
  bool operator==(const TpuRequirement&) const = default;
};

// ext_ml_gang: the job runs as `size` members on as many workers at once,
// each member needing the job's other hard constraints (see docs/matching.md). An
// elastic gang (min_size..max_size) starts with `size` = min_size members and may
// grow to max_size while it runs; a fixed one (`size`) has max_size == size.
struct GangRequirement {
  int size = 0;            // 0: not a gang; else the members it starts with, 1..kMaxGangSize
  int max_size = 0;        // the most members it runs with (== size unless elastic)
  std::string same_label;  // members must share this label's value ("" = any)
  bool elastic() const { return max_size > size; }
  bool operator==(const GangRequirement&) const = default;
};
inline constexpr int kMaxGangSize = 64;
// The label a multi-node NVLink domain is advertised under (NVIDIA GPU feature discovery).
inline constexpr const char* kNvlinkDomainLabel = "nvidia.com/gpu.clique";

struct HardConstraints {
  // Explicit or inferred. cpu is kept for the record but constrains nothing:
  // every worker has CPUs.
  std::optional<Accelerator> accelerator;
  GpuRequirement gpu;
  TpuRequirement tpu;
  std::optional<double> memory_gb;
  std::optional<int> cpu_cores;
  std::optional<double> storage_gb;
  std::optional<double> shm_size_gb;
  Labels node_selector;
  std::vector<AffinityRule> required_affinity;
  std::vector<AffinityRule> anti_affinity;  // against jobs active on the worker
  // Hard pin: only when both id and version are given.
  std::string pinned_model_id;
  std::string pinned_model_version;
  std::string runtime;
  std::string model_format;
  GangRequirement gang;
  bool operator==(const HardConstraints&) const = default;
};

struct SoftPreferences {
  std::vector<AffinityRule> preferred_affinity;  // each with weight 0..100
  std::string locality_model_id;                 // model_id given without version
  bool operator==(const SoftPreferences&) const = default;
  bool empty() const { return preferred_affinity.empty() && locality_model_id.empty(); }
};

struct CheckpointConfig {
  bool enabled = false;
  int interval_s = 300;
  std::string storage_uri;  // s3:// gs:// az:// file://, ends with '/'
  int max_count = 3;        // FIFO eviction beyond this
  bool on_preempt = false;
  bool operator==(const CheckpointConfig&) const = default;
};

struct Scheduling {
  std::optional<PriorityClass> priority_class;  // absent: the queue's default applies
  bool preemptible = false;                     // default: true only for spot
  int grace_period_s = 30;
  // A job that has run less than this is not chosen as a victim while preempting
  // others frees enough (protects the work before its first checkpoint).
  std::optional<int> min_runtime_before_preempt_s;
  CheckpointConfig checkpoint;
  std::optional<int> timeout_seconds;  // overrides the job timeout
  std::optional<int> estimated_duration_seconds;  // declared run time (sjf, backfill); 1 .. 1 year
  std::string reservation_id;
  std::optional<int> reservation_timeout_s;
  bool priority_escalation = false;
  std::optional<int> escalation_after_s;
  std::optional<PriorityClass> escalation_target_class;
  int gang_timeout_s = 60;  // how long a gang's members are held while it forms
  bool operator==(const Scheduling&) const = default;
};

// Descriptive fields that neither match nor schedule, kept for workers and INFO.
struct ModelInfo {
  std::string id, version, provider, checksum, format, registry, registry_uri;
  bool operator==(const ModelInfo&) const = default;
};
struct ComputeInfo {
  std::optional<int> max_tokens;
  std::optional<int> max_batch_size;
  std::string precision;
  std::string distributed_strategy;
  bool operator==(const ComputeInfo&) const = default;
};

struct Requirements {
  HardConstraints hard;
  SoftPreferences soft;
  Scheduling scheduling;
  ModelInfo model;
  ComputeInfo compute;

  // False for a plain OJS job: any worker, even one without capabilities, may run it.
  bool has_hard_constraints() const;
  int gpu_count() const { return hard.gpu.count; }
  bool operator==(const Requirements&) const = default;
};

// Reads all ext_ml_* groups from a job document in any accepted encoding
// (top-level ext_ml_*, ext_ml_node_affinity, meta.resources/model/affinity/...;
// top level wins), validates them against the extension schema and applies the
// spec's inferences and defaults.
// Throws ojs::OjsError (invalid_request, 400) via ojs::invalid_field naming the
// attribute as the producer spelled it (e.g. "meta.resources.gpu.count") and the rule.
Requirements parse_requirements(const nlohmann::json& job);

// Every ML attribute of a job by its name without "ext_ml_" (values as sent,
// unvalidated), from both encodings through the one alias table: meta.* spellings
// (meta.compute.runtime -> runtime, meta.model.id -> model_id, ...), then the top
// level, which wins. Throws like parse_requirements on a meta.* that is not an object.
std::map<std::string, const nlohmann::json*> ml_attributes(const nlohmann::json& job);

// The minimum compute capability a precision needs: bf16 8.0, fp8 8.9, int8/int4
// 7.5, fp16/fp32 7.0; nullopt for an unknown precision.
std::optional<ComputeCapability> implied_compute_capability(std::string_view precision);

}  // namespace ojs::ml
