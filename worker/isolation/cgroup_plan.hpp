// What a job's cgroup is given, decided without touching the kernel: the limit files
// written (their names differ between cgroup v1 and v2, the rules do not) and the
// device allow-list (v1 writes it to devices.allow, v2 compiles it to a BPF program).
#pragma once
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ojs::worker {

// One GPU the job may use: its /dev/nvidia<minor> node. MIG devices use their GPU's.
struct GpuNode {
  int minor = 0;
  bool mig = false;
};

struct JobLimits {
  std::optional<std::uint64_t> memory_bytes;  // none: no limit
  std::vector<GpuNode> gpus;
  std::set<int> numa_nodes;  // of its GPUs: the job runs on their CPUs (none: the worker's CPUs)
};

// The controllers whose limits a job gets, besides the device allow-list.
inline const char* const kLimitControllers[] = {"memory", "cpuset", "pids"};

struct CgroupWrite {
  std::string controller;  // memory, cpuset, pids
  std::string file;        // in the job's directory of that controller
  std::string value;
  // Optional: skipped when the kernel has no such file (swap not accounted), and a
  // refusal is logged rather than failing the job (CPUs outside the worker's set).
  bool optional = false;
};

// The limit files of a job's cgroup in `version` ("v1", "v2"), in the order written.
// cpus: the CPUs it is pinned to ("" none).
std::vector<CgroupWrite> limit_writes(const std::string& version, const JobLimits& limits, const std::string& cpus, long pids_max);

// A device node of the job's private /dev.
struct DevNode {
  std::string name;  // under /dev
  int major = 0;
  int minor = 0;
};

// The allow-list in v1's devices.allow syntax: the standard nodes (null, zero, full,
// random, urandom, tty, console, ptmx, the ptys), the job's own nodes, and read access
// to the MIG capability nodes (major caps_major, -1: none) for a MIG slice.
std::vector<std::string> device_allow_rules(const std::vector<DevNode>& job_nodes, bool mig, int caps_major);

}  // namespace ojs::worker
