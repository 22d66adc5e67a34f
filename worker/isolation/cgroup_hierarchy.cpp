#include "worker/isolation/cgroup_hierarchy.hpp"

#include <fstream>
#include <set>
#include <sstream>
#include <vector>

namespace ojs::worker {

namespace {

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape(const std::string& field) {
  std::string out;
  for (std::size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      const std::string digits = field.substr(i + 1, 3);
      if (digits.find_first_not_of("01234567") == std::string::npos) {
        out.push_back(static_cast<char>(std::stoi(digits, nullptr, 8)));
        i += 3;
        continue;
      }
    }
    out.push_back(field[i]);
  }
  return out;
}

// The controllers a v1 mount's super options name ("rw,cpu,cpuacct" -> cpu, cpuacct).
std::vector<std::string> v1_controllers(const std::string& super_options) {
  static const std::set<std::string> kControllers = {"blkio",  "cpu",   "cpuacct",  "cpuset",     "devices", "freezer", "hugetlb",
                                                     "memory", "misc",  "net_cls",  "net_prio",   "perf_event", "pids", "rdma"};
  std::vector<std::string> out;
  std::stringstream options(super_options);
  for (std::string option; std::getline(options, option, ',');)
    if (kControllers.count(option)) out.push_back(option);
  return out;
}

}  // namespace

CgroupHost parse_cgroup_host(const std::string& proc_self_cgroup, const std::string& mountinfo) {
  CgroupHost host;
  std::stringstream mounts(mountinfo);
  for (std::string line; std::getline(mounts, line);) {
    const auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::stringstream before(line.substr(0, dash)), after(line.substr(dash + 3));
    std::string id, parent, device, root, mount_point, fs_type, source, super_options;
    if (!(before >> id >> parent >> device >> root >> mount_point) || !(after >> fs_type >> source >> super_options)) continue;
    if (fs_type == "cgroup2" && host.v2_mount.empty()) host.v2_mount = unescape(mount_point);
    if (fs_type == "cgroup")
      for (const auto& controller : v1_controllers(super_options)) host.v1_mounts.emplace(controller, unescape(mount_point));
  }
  std::stringstream cgroups(proc_self_cgroup);
  for (std::string line; std::getline(cgroups, line);)
    if (line.rfind("0::", 0) == 0) host.v2_own = line.substr(3);
  if (!host.v1_mounts.empty()) host.layout = host.v2_mount.empty() ? "v1" : "hybrid";
  else if (!host.v2_mount.empty()) host.layout = "unified";
  return host;
}

std::string read_kernel_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

CgroupHost read_cgroup_host() { return parse_cgroup_host(read_kernel_file("/proc/self/cgroup"), read_kernel_file("/proc/self/mountinfo")); }

std::string choose_cgroup_version(const CgroupHost& host, const std::string& setting, std::string* why_not) {
  const auto none = [&](const std::string& why) {
    if (why_not) *why_not = why;
    return std::string();
  };
  if (setting == "v1") return host.v1_mounts.empty() ? none("isolation.cgroup_version is v1 but the host mounts no cgroup v1 hierarchy") : "v1";
  if (setting == "v2") return host.v2_mount.empty() ? none("isolation.cgroup_version is v2 but the host mounts no cgroup2 hierarchy") : "v2";
  if (host.layout == "unified") return "v2";
  if (host.layout == "v1" || host.layout == "hybrid") return "v1";
  return none("the host mounts no cgroup hierarchy (neither cgroup v1 nor cgroup2 in /proc/self/mountinfo)");
}

}  // namespace ojs::worker
