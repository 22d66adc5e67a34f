// Kernel-enforced isolation of each job, without a container runtime: a cgroup per
// job (memory limit, CPUs local to its GPUs, a pids limit, a device allow-list) and a
// mount namespace whose private /dev holds only the standard nodes and the nodes of
// the job's own GPUs (with the NVIDIA control nodes when it has one).
//
// The agent prepares the cgroups (JobCgroup) and starts the job through itself in
// launcher mode (`worker --exec-isolated PLAN -- argv...`, run_isolated below): the
// launcher joins the cgroups, builds the private /dev and execs the job, so the job
// is confined from its first instruction and keeps the pid and process group the
// agent signals.
//
// cgroup v1 (memory, devices, cpuset, pids hierarchies, the allow-list in
// devices.allow) or cgroup v2 (one tree below the agent's own cgroup, the controllers
// enabled in cgroup.subtree_control, the allow-list a BPF program on each job's
// cgroup): the host's layout decides, or isolation.cgroup_version.
#pragma once
#include "worker/isolation/cgroup_plan.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ojs::worker {

// "isolation" in the worker config.
struct IsolationConfig {
  std::string mode = "auto";  // auto: on when the agent runs as root and the host allows it; on: required; off
  std::string cgroup_version = "auto";  // auto: v2 on a cgroup2-only host, v1 on a v1 or hybrid one; v1; v2
  std::string cgroup_root = "/sys/fs/cgroup";  // v1's hierarchies are below it; v2 uses it when it is a cgroup2 root
  std::string dev_dir = "/dev";      // where the host's GPU nodes are read (their major/minor)
  long pids_max = 4096;              // per job
  // NUMA node -> CPU list ("0-15"), overriding /sys/devices/system/node/node<N>/cpulist.
  std::map<int, std::string> numa_cpus;
  // CUDA version -> host directory, bind-mounted read-only for a job that asks for it (cuda_libraries.hpp).
  std::map<std::string, std::string> cuda_libraries;
};

// A job's cgroups, made before it starts; removed (leftover processes killed) when destroyed.
class JobCgroup {
 public:
  ~JobCgroup();
  JobCgroup(const JobCgroup&) = delete;
  JobCgroup& operator=(const JobCgroup&) = delete;
  // The launcher's plan: the cgroup.procs files to join and the private /dev to build.
  const nlohmann::json& plan() const { return plan_; }
  // Whether the kernel's OOM killer killed a process of the job (its memory limit).
  bool oom_killed() const;
  std::optional<std::uint64_t> memory_limit() const { return memory_limit_; }
  const std::string& cpus() const { return cpus_; }

 private:
  friend class JobIsolation;
  JobCgroup() = default;
  std::vector<std::string> dirs_;  // one per v1 hierarchy; v2: the one directory
  std::string oom_counter_file_;   // v1 memory.oom_control, v2 memory.events ("" without the memory controller)
  std::optional<std::uint64_t> memory_limit_;
  std::string cpus_;
  nlohmann::json plan_;
};

class JobIsolation {
 public:
  ~JobIsolation();  // removes this run's cgroup directories
  // Isolation as configured and as this host allows; nullptr (and *why_off says why)
  // when off. launcher: the worker binary, run in launcher mode for each job.
  static std::unique_ptr<JobIsolation> create(const IsolationConfig& config, const std::string& launcher,
                                              const std::string& worker_id, std::string* why_off);
  // What the worker advertises: "cgroup-v1" or "cgroup-v2" (with the private /dev).
  const std::string& mode() const { return mode_; }
  // The controllers each job is confined by (devices, and memory, cpuset, pids where the host has them).
  std::vector<std::string> controllers() const;
  // Creates the job's cgroups (`name`: unique per attempt) with its limits, and the
  // launcher's plan, with the CUDA libraries of cuda_version ("" none) to mount.
  // Throws when the worker has CUDA libraries but not that version.
  std::unique_ptr<JobCgroup> prepare(const std::string& name, const JobLimits& limits, const std::string& cuda_version = "") const;
  // The argv that runs `argv` confined by `plan_file` (the plan written by the caller).
  std::vector<std::string> wrap(const std::vector<std::string>& argv, const std::string& plan_file) const;
  // The CPUs of these NUMA nodes ("" when unknown).
  std::string cpus_of(const std::set<int>& numa_nodes) const;

 private:
  JobIsolation() = default;
  void set_up_v1(const std::string& worker_id);
  void set_up_v2(const std::string& v2_root, const std::string& own, const std::string& worker_id);

  IsolationConfig config_;
  std::string launcher_;
  std::string version_;  // v1, v2
  std::string mode_;
  // Controller (memory, devices, cpuset, pids) -> this agent run's directory: one per
  // v1 hierarchy; in v2 the same directory for each (devices: the BPF program's).
  std::map<std::string, std::string> parents_;
  std::vector<std::pair<std::string, std::string>> missing_;  // controller, why the host lacks it
  int uvm_major_ = -1;                          // nvidia-uvm's major from /proc/devices (-1: no driver)
  int caps_major_ = -1;                         // nvidia-caps (MIG capability nodes)
};

// Launcher mode: joins the plan's cgroups, builds the private /dev, mounts the CUDA
// libraries the plan names read-only, execs argv.
// Returns only on failure (the exit code, after a message on stderr).
int run_isolated(const std::string& plan_file, const std::vector<std::string>& argv);

}  // namespace ojs::worker
