// The resources a running attempt's use is counted in, in the
// order of _lib_accounting.lua's USAGE_RESOURCES: each is an amount held times the
// microseconds it was held, an exact integer in the job's record (usage_<name>_us),
// the queue's totals and its per-hour rollup (keys.hpp usage_totals, usage_hours).
#pragma once

#include <array>

namespace ojs::broker {

struct UsageResource {
  const char* name;      // as stored: the amount's unit is in it (MB for memory)
  const char* reported;  // as answered and exported, in resource-seconds
  double per_unit;       // stored resource-microseconds per reported resource-second
};

inline constexpr std::array<UsageResource, 4> kUsageResources = {{
    {"gpu", "gpu", 1e6},                      // GPUs charged at claim
    {"cpu", "cpu", 1e6},                      // ext_ml cpu_cores, 1 when none
    {"memory_mb", "memory_gb", 1e9},          // ext_ml memory_gb, as MB
    {"gpu_memory_mb", "gpu_memory_gb", 1e9},  // GPU memory charged at claim, MB
}};

}  // namespace ojs::broker
