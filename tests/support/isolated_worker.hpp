// A real worker agent with job isolation, for the tests of the kernel's confinement
// (tests/integration/job_isolation*_test.cpp): two simulated GPUs on NUMA nodes 0
// and 1 whose /dev/nvidia<N> nodes are made for the test with the NVIDIA major (no
// driver needed: opening one's own node reaches the device check and then ENXIO),
// and probe jobs that report what they see as key=value lines.
#pragma once
#include <sched.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "support/child_process.hpp"
#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

namespace ojs::test {

// Why this kernel refuses a mount namespace to the tests ("" when it allows one): probed.
inline std::string mount_namespace_refused() {
  const pid_t pid = ::fork();
  if (pid == 0) _exit(::unshare(CLONE_NEWNS) == 0 ? 0 : 1);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "unshare(CLONE_NEWNS) is refused";
  return "";
}

// The probe lines both cgroup versions' tests share: what /dev holds, the CPUs the job
// may run on, opening each GPU's node (ENXIO: its own, reached the device check; EPERM:
// refused) and a node it forges for another GPU.
inline const char* const kDeviceProbe = R"sh(
echo "dev=$(ls /dev | tr '\n' ' ')"
echo "cpus=$(grep Cpus_allowed_list /proc/self/status | cut -f2)"
for n in 0 1; do
  if [ -e /dev/nvidia$n ]; then echo "open$n=$( (exec 3</dev/nvidia$n) 2>&1 | sed 's/.*: //')"; else echo "open$n=absent"; fi
done
if mknod forged c 195 7 2>/dev/null; then echo "forged=$( (exec 3<forged) 2>&1 | sed 's/.*: //')"; else echo "forged=mknod refused"; fi
)sh";

// A job's stdout as key=value lines.
inline std::map<std::string, std::string> probe_result(const nlohmann::json& job) {
  std::map<std::string, std::string> out;
  std::stringstream lines(job["result"].value("stdout", std::string()));
  for (std::string line; std::getline(lines, line);)
    if (const auto eq = line.find('='); eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
  return out;
}

inline nlohmann::json isolated_job(const std::string& type, const nlohmann::json& attrs) {
  nlohmann::json job = ml_job("iso", attrs);
  job["type"] = type;
  return job;
}

struct IsolatedWorker {
  std::string dir = make_temp_dir("isolation");
  std::unique_ptr<ChildProcess> agent;

  // isolation: the config's "isolation" object, given dev_dir and numa_cpus here;
  // commands: TYPE=CMD assignments; extra: more config fields.
  IsolatedWorker(const std::string& broker_url, nlohmann::json isolation, const std::vector<std::string>& commands,
                 const nlohmann::json& extra = nlohmann::json::object()) {
    // Two GPUs on NUMA nodes 0 and 1; node 0's CPU is 0, node 1's is 1.
    std::ofstream(dir + "/caps.json") << nlohmann::json{{"simulate", true},
                                                        {"accelerator", "gpu"},
                                                        {"gpu", {{"type", "nvidia-a100"}, {"count", 2}, {"memory_gb", 80}}},
                                                        {"devices", nlohmann::json::array({{{"index", 0}, {"numa_node", 0}},
                                                                                           {{"index", 1}, {"numa_node", 1}}})},
                                                        {"cpu_cores", 2},
                                                        {"memory_gb", 8}}
                                             .dump();
    std::filesystem::create_directories(dir + "/dev");
    for (int minor : {0, 1}) ::mknod((dir + "/dev/nvidia" + std::to_string(minor)).c_str(), S_IFCHR | 0666, makedev(195, minor));
    isolation["dev_dir"] = dir + "/dev";
    isolation["numa_cpus"] = {{"0", "0"}, {"1", "1"}};
    nlohmann::json config = extra;
    config["isolation"] = isolation;
    std::ofstream(dir + "/worker.json") << config.dump();
    std::vector<std::string> argv = {binary_path("worker/worker"), "--broker", broker_url, "--worker-id", "isolated", "--queues", "iso",
                                     "--config", dir + "/worker.json", "--capabilities-file", dir + "/caps.json", "--poll-interval-ms",
                                     "100", "--heartbeat-interval-s", "1", "--log-level", "warn", "--concurrency", "2", "--work-dir",
                                     dir + "/work"};
    for (const auto& command : commands) {
      argv.push_back("--command");
      argv.push_back(command);
    }
    agent = std::make_unique<ChildProcess>(argv);
  }
};

}  // namespace ojs::test
