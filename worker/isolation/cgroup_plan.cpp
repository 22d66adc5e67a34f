#include "worker/isolation/cgroup_plan.hpp"

namespace ojs::worker {

std::vector<CgroupWrite> limit_writes(const std::string& version, const JobLimits& limits, const std::string& cpus, long pids_max) {
  const bool v2 = version == "v2";
  std::vector<CgroupWrite> out;
  if (limits.memory_bytes) {
    const std::string bytes = std::to_string(*limits.memory_bytes);
    out.push_back({"memory", v2 ? "memory.max" : "memory.limit_in_bytes", bytes, false});
    // Over its limit the job is OOM-killed, not swapped: v1's memsw limit covers
    // memory plus swap, v2's swap limit is swap alone.
    if (v2) out.push_back({"memory", "memory.swap.max", "0", true});
    else out.push_back({"memory", "memory.memsw.limit_in_bytes", bytes, true});
  }
  out.push_back({"pids", "pids.max", std::to_string(pids_max), false});
  if (!cpus.empty()) out.push_back({"cpuset", "cpuset.cpus", cpus, true});
  return out;
}

std::vector<std::string> device_allow_rules(const std::vector<DevNode>& job_nodes, bool mig, int caps_major) {
  std::vector<std::string> rules = {"c 1:3 rwm", "c 1:5 rwm", "c 1:7 rwm", "c 1:8 rwm", "c 1:9 rwm",
                                    "c 5:0 rwm", "c 5:1 rwm", "c 5:2 rwm", "c 136:* rwm"};
  for (const auto& node : job_nodes) rules.push_back("c " + std::to_string(node.major) + ":" + std::to_string(node.minor) + " rwm");
  if (mig && caps_major >= 0 && !job_nodes.empty()) rules.push_back("c " + std::to_string(caps_major) + ":* r");
  return rules;
}

}  // namespace ojs::worker
