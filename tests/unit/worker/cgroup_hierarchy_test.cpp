// Which cgroup hierarchy a host has and which version the agent isolates with
// (worker/isolation/cgroup_hierarchy.hpp), read from recorded /proc/self/cgroup and
// /proc/self/mountinfo text: a hybrid host (this project's build machine), a
// systemd host with cgroup v2 only, and a v1-only host.
#include <gtest/gtest.h>

#include "worker/isolation/cgroup_hierarchy.hpp"

using ojs::worker::choose_cgroup_version;
using ojs::worker::parse_cgroup_host;

namespace {

// The build machine: v1 controllers, and systemd's cgroup2 mount at unified holding none of them.
const char* kHybridCgroup = R"(9:name=systemd:/
8:pids:/
5:devices:/
4:memory:/process_api/5ac83faa
3:cpuset:/
2:cpuacct:/
1:cpu:/
0::/
)";
const char* kHybridMounts = R"(23 27 0:22 / /sys rw,relatime - sysfs sysfs rw
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
36 31 0:33 / /sys/fs/cgroup/devices rw,relatime - cgroup cgroup rw,devices
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
)";

// A systemd host booted with the unified hierarchy; the agent runs as a delegated service.
const char* kUnifiedCgroup = "0::/system.slice/ojs-worker.service\n";
const char* kUnifiedMounts = R"(22 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw
26 22 0:24 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
)";

// An older host: v1 only, cpu and cpuacct co-mounted, a mount point with an escaped space.
const char* kV1Cgroup = R"(4:memory:/user.slice
3:cpu,cpuacct:/user.slice
2:devices:/user.slice
1:name=systemd:/user.slice/session-1.scope
)";
const char* kV1Mounts = R"(30 25 0:26 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory
31 25 0:27 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct
32 25 0:28 / /sys/fs/cgroup/my\040devices rw - cgroup cgroup rw,devices
33 25 0:29 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,xattr,name=systemd
)";

}  // namespace

TEST(CgroupHierarchy, AHybridHostIsolatesWithV1UnlessV2IsAskedFor) {
  const auto host = parse_cgroup_host(kHybridCgroup, kHybridMounts);
  EXPECT_EQ(host.layout, "hybrid");
  EXPECT_EQ(host.v2_mount, "/sys/fs/cgroup/unified");
  EXPECT_EQ(host.v2_own, "/");
  EXPECT_EQ(host.v1_mounts.at("memory"), "/sys/fs/cgroup/memory");
  EXPECT_EQ(host.v1_mounts.count("systemd"), 0u) << "name=systemd is no controller";
  EXPECT_EQ(choose_cgroup_version(host, "auto", nullptr), "v1");
  EXPECT_EQ(choose_cgroup_version(host, "v2", nullptr), "v2");
  EXPECT_EQ(choose_cgroup_version(host, "v1", nullptr), "v1");
}

TEST(CgroupHierarchy, AUnifiedHostIsolatesWithV2InItsOwnCgroup) {
  const auto host = parse_cgroup_host(kUnifiedCgroup, kUnifiedMounts);
  EXPECT_EQ(host.layout, "unified");
  EXPECT_EQ(host.v2_mount, "/sys/fs/cgroup");
  EXPECT_EQ(host.v2_own, "/system.slice/ojs-worker.service");
  EXPECT_TRUE(host.v1_mounts.empty());
  EXPECT_EQ(choose_cgroup_version(host, "auto", nullptr), "v2");
  std::string why;
  EXPECT_EQ(choose_cgroup_version(host, "v1", &why), "");
  EXPECT_EQ(why, "isolation.cgroup_version is v1 but the host mounts no cgroup v1 hierarchy");
}

TEST(CgroupHierarchy, AV1HostHasNoV2) {
  const auto host = parse_cgroup_host(kV1Cgroup, kV1Mounts);
  EXPECT_EQ(host.layout, "v1");
  EXPECT_EQ(host.v2_mount, "");
  EXPECT_EQ(host.v1_mounts.at("cpu"), "/sys/fs/cgroup/cpu,cpuacct");
  EXPECT_EQ(host.v1_mounts.at("cpuacct"), "/sys/fs/cgroup/cpu,cpuacct");
  EXPECT_EQ(host.v1_mounts.at("devices"), "/sys/fs/cgroup/my devices");
  EXPECT_EQ(choose_cgroup_version(host, "auto", nullptr), "v1");
  std::string why;
  EXPECT_EQ(choose_cgroup_version(host, "v2", &why), "");
  EXPECT_EQ(why, "isolation.cgroup_version is v2 but the host mounts no cgroup2 hierarchy");
}

TEST(CgroupHierarchy, NoCgroupMountedIsNoVersion) {
  const auto host = parse_cgroup_host("", "22 1 0:21 / /proc rw - proc proc rw\n");
  EXPECT_EQ(host.layout, "none");
  std::string why;
  EXPECT_EQ(choose_cgroup_version(host, "auto", &why), "");
  EXPECT_NE(why.find("no cgroup hierarchy"), std::string::npos) << why;
}
