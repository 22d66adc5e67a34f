// What a job's cgroup is given (worker/isolation/cgroup_plan.hpp): the limit files in
// cgroup v1 and v2 for the same job, and the device allow-list both versions enforce.
#include <gtest/gtest.h>

#include "worker/isolation/cgroup_plan.hpp"

using namespace ojs::worker;

namespace {

std::vector<std::string> described(const std::vector<CgroupWrite>& writes) {
  std::vector<std::string> out;
  for (const auto& w : writes) out.push_back(w.controller + "/" + w.file + "=" + w.value + (w.optional ? " (optional)" : ""));
  return out;
}

JobLimits one_gb_on_numa_0() {
  JobLimits limits;
  limits.memory_bytes = 1'000'000'000;
  limits.numa_nodes = {0};
  return limits;
}

}  // namespace

TEST(CgroupPlan, V1WritesTheV1Files) {
  EXPECT_EQ(described(limit_writes("v1", one_gb_on_numa_0(), "0-7", 4096)),
            (std::vector<std::string>{"memory/memory.limit_in_bytes=1000000000", "memory/memory.memsw.limit_in_bytes=1000000000 (optional)",
                                      "pids/pids.max=4096", "cpuset/cpuset.cpus=0-7 (optional)"}));
}

TEST(CgroupPlan, V2WritesMemoryMaxAndNoSwap) {
  EXPECT_EQ(described(limit_writes("v2", one_gb_on_numa_0(), "0-7", 64)),
            (std::vector<std::string>{"memory/memory.max=1000000000", "memory/memory.swap.max=0 (optional)", "pids/pids.max=64",
                                      "cpuset/cpuset.cpus=0-7 (optional)"}));
}

TEST(CgroupPlan, NoMemoryDeclaredAndNoCpusIsOnlyThePidsLimit) {
  EXPECT_EQ(described(limit_writes("v2", JobLimits{}, "", 4096)), (std::vector<std::string>{"pids/pids.max=4096"}));
}

TEST(CgroupPlan, TheAllowListHoldsTheStandardNodesAndTheJobsOwn) {
  const auto standard = device_allow_rules({}, false, -1);
  EXPECT_EQ(standard, (std::vector<std::string>{"c 1:3 rwm", "c 1:5 rwm", "c 1:7 rwm", "c 1:8 rwm", "c 1:9 rwm", "c 5:0 rwm", "c 5:1 rwm",
                                                "c 5:2 rwm", "c 136:* rwm"}));
  const auto gpu = device_allow_rules({{"nvidia1", 195, 1}, {"nvidiactl", 195, 255}}, false, 240);
  EXPECT_EQ(std::vector<std::string>(gpu.begin() + 9, gpu.end()), (std::vector<std::string>{"c 195:1 rwm", "c 195:255 rwm"}));
  const auto mig = device_allow_rules({{"nvidia0", 195, 0}}, true, 240);
  EXPECT_EQ(mig.back(), "c 240:* r") << "a MIG slice reads its capability nodes";
  EXPECT_EQ(device_allow_rules({}, true, 240).size(), standard.size()) << "no GPU: no capability nodes";
}
