// The device allow-list of cgroup v2: a BPF_PROG_TYPE_CGROUP_DEVICE program attached
// to a job's cgroup, which the kernel runs on every open or mknod of a device node by
// a process in it (cgroup v1's devices.allow, where v2 has no file for it). Built from
// the same rules as v1's ("c 195:0 rwm", "c 136:* rwm"): a node no rule allows is
// refused with EPERM.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ojs::worker {

struct DeviceRule {
  bool block = false;  // b, else c
  int major = -1;      // -1: any
  int minor = -1;      // -1: any
  unsigned access = 0; // BPF_DEVCG_ACC_* bits: mknod 1, read 2, write 4
};

// "c 1:3 rwm", "c 136:* rwm", "b 8:* r"; throws std::invalid_argument on anything else.
DeviceRule parse_device_rule(const std::string& rule);

// The program's instructions (struct bpf_insn, 8 bytes each), in the kernel's encoding:
// allow when a rule matches the type, major, minor and every access asked, else deny.
std::vector<std::uint64_t> device_filter_program(const std::vector<DeviceRule>& rules);

// Loads the program and attaches it to the cgroup directory `cgroup_dir` (cgroup v2),
// beside any program already there (BPF_F_ALLOW_MULTI: a device must pass them all).
// Throws std::runtime_error naming the step and the kernel's answer (and the verifier's log).
void attach_device_filter(const std::string& cgroup_dir, const std::vector<DeviceRule>& rules);

}  // namespace ojs::worker
