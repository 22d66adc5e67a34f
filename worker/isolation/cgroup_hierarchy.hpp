// Which cgroup hierarchy the host has, read from the process's own
// /proc/self/cgroup and /proc/self/mountinfo: cgroup v2 alone ("unified"), cgroup
// v1 alone, or both ("hybrid": v1 holds the controllers, a cgroup2 mount beside it
// holds what v1 does not), and which version the agent isolates jobs with.
#pragma once
#include <map>
#include <string>

namespace ojs::worker {

struct CgroupHost {
  std::string layout = "none";                    // unified, v1, hybrid, none
  std::string v2_mount;                           // the cgroup2 mount point ("" when none)
  std::string v2_own = "/";                       // this process's cgroup there (the "0::" line)
  std::map<std::string, std::string> v1_mounts;   // controller -> its v1 hierarchy's mount point
};

// A kernel file's text (/proc, /sys, a cgroup's files), trailing newlines and
// spaces dropped; "" when it cannot be read (a file that is absent says nothing).
std::string read_kernel_file(const std::string& path);

// From the two files' text (recorded in tests, read from /proc/self otherwise).
CgroupHost parse_cgroup_host(const std::string& proc_self_cgroup, const std::string& mountinfo);
CgroupHost read_cgroup_host();

// "v1" or "v2" for isolation.cgroup_version (auto, v1, v2) on this host; "" when the
// host has no such hierarchy, and *why_not says so. auto: v2 on a unified host, v1 on
// a v1 or hybrid one (there v1 holds the memory, cpuset and pids controllers).
std::string choose_cgroup_version(const CgroupHost& host, const std::string& setting, std::string* why_not);

}  // namespace ojs::worker
