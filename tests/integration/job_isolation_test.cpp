// Kernel-enforced isolation of each job by the real worker agent (run as root, with
// isolation required: `isolation.mode on`), with a real broker and Redis: a job runs
// in its own cgroups with its limits set (memory from ext_ml_memory_gb, pids, the
// CPUs of its GPUs' NUMA node), sees in its private /dev only its own GPU's node
// (opening it reaches the device check: ENXIO without a driver) and cannot open a
// node of another GPU even when it forges one (EPERM, or mknod refused); a job with
// no GPU sees none; a job over its memory is OOM-killed and failed with that reason.
// No GPU driver is needed: the GPU nodes are created for the test with the NVIDIA
// major number. Where the kernel refuses what this needs (not root, no cgroup v1
// hierarchies, no mount namespace), each test is reported skipped with the reason.
// ctest-per-test: integration.job_isolation.
// ctest-skip-without: root-cgroups
// ctest-timeout: 300
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "support/isolated_worker.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

// Why this kernel cannot run the tests ("" when it can): probed, not assumed.
std::string kernel_refuses() {
  if (::geteuid() != 0) return "the tests run as uid " + std::to_string(::geteuid()) + ", not root";
  for (const char* h : {"memory", "devices", "cpuset", "pids"})
    if (!std::filesystem::exists(std::string("/sys/fs/cgroup/") + h + "/cgroup.procs"))
      return std::string("no cgroup v1 ") + h + " hierarchy at /sys/fs/cgroup/" + h;
  return mount_namespace_refused();
}

#define REQUIRE_KERNEL_SUPPORT()                                               \
  do {                                                                         \
    if (const auto why = kernel_refuses(); !why.empty()) GTEST_SKIP() << why; \
  } while (0)

// What the probe job reports, one key=value per line.
const char* kProbe = R"sh(
m=$(grep ':memory:' /proc/self/cgroup | cut -d: -f3)
p=$(grep ':pids:' /proc/self/cgroup | cut -d: -f3)
echo "cgroup=$m"
echo "mem_limit=$(cat /sys/fs/cgroup/memory$m/memory.limit_in_bytes)"
echo "pids_max=$(cat /sys/fs/cgroup/pids$p/pids.max)"
)sh";

// The cgroup version is left to the agent: auto picks v1 on a v1 or hybrid host.
struct V1Worker : IsolatedWorker {
  explicit V1Worker(const std::string& broker_url)
      : IsolatedWorker(broker_url, {{"mode", "on"}},
                       {std::string("ml.probe=") + kProbe + kDeviceProbe, "ml.hog=python3 -c 'b = bytearray(1500 * 1000 * 1000); print(len(b))'"}) {}
};

json job_of(const std::string& type, const json& attrs) { return isolated_job(type, attrs); }

}  // namespace

TEST(JobIsolation, AGpuJobRunsInItsCgroupAndSeesOnlyItsGpu) {
  REQUIRE_KERNEL_SUPPORT();
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  V1Worker worker(broker.url());
  const auto id = api.push(job_of("ml.probe", {{"ext_ml_gpu_count", 1}, {"ext_ml_memory_gb", 1}}));
  const auto job = wait_for_state(api, id, "completed");
  ASSERT_EQ(job["state"], "completed") << job.dump();
  const int mine = job["ext_ml_assigned_devices"][0];
  const int other = 1 - mine;
  auto seen = probe_result(job);
  EXPECT_NE(seen["cgroup"].find("/ojs/isolated-"), std::string::npos) << seen["cgroup"];
  // 1 GB, as the kernel keeps it: in whole pages.
  EXPECT_NEAR(std::stod(seen["mem_limit"].empty() ? "0" : seen["mem_limit"]), 1e9, 4096) << seen["mem_limit"];
  EXPECT_EQ(seen["pids_max"], "4096");
  EXPECT_EQ(seen["cpus"], std::to_string(mine)) << "the job's CPUs are its GPU's NUMA node's";
  const std::string dev = " " + seen["dev"];
  EXPECT_NE(dev.find(" nvidia" + std::to_string(mine) + " "), std::string::npos) << dev;
  EXPECT_NE(dev.find(" nvidiactl "), std::string::npos) << dev;
  EXPECT_EQ(dev.find(" nvidia" + std::to_string(other) + " "), std::string::npos) << dev;
  EXPECT_EQ(seen["open" + std::to_string(mine)], "No such device or address") << "its own GPU passes the device check";
  EXPECT_EQ(seen["open" + std::to_string(other)], "absent");
  EXPECT_TRUE(seen["forged"] == "Operation not permitted" || seen["forged"] == "mknod refused") << seen["forged"];
  // The worker says which mode it runs in.
  const auto workers = api.get("/ojs/v1/admin/workers").body;
  ASSERT_FALSE(workers["items"].empty());
  EXPECT_EQ(workers["items"][0]["capabilities"]["labels"]["ojs.io/isolation"], "cgroup-v1");
}

TEST(JobIsolation, AJobWithoutGpusSeesNone) {
  REQUIRE_KERNEL_SUPPORT();
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  V1Worker worker(broker.url());
  const auto id = api.push(job_of("ml.probe", json::object()));
  const auto job = wait_for_state(api, id, "completed");
  ASSERT_EQ(job["state"], "completed") << job.dump();
  auto seen = probe_result(job);
  EXPECT_EQ(seen["dev"].find("nvidia"), std::string::npos) << seen["dev"];
  EXPECT_EQ(seen["open0"], "absent");
  EXPECT_EQ(seen["open1"], "absent");
  EXPECT_TRUE(seen["forged"] == "Operation not permitted" || seen["forged"] == "mknod refused") << seen["forged"];
  EXPECT_GE(seen["mem_limit"].size(), 10u) << "no memory declared: no limit (" << seen["mem_limit"] << ")";
}

TEST(JobIsolation, AJobOverItsMemoryIsOomKilledAndFailed) {
  REQUIRE_KERNEL_SUPPORT();
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  V1Worker worker(broker.url());
  // 1.5 GB written into a 0.5 GB limit.
  const auto id = api.push(job_of("ml.hog", {{"ext_ml_memory_gb", 0.5}, {"retry", {{"max_attempts", 1}}}}));
  ASSERT_TRUE(wait_until([&] {
    const auto state = api.get("/ojs/v1/jobs/" + id).body["job"]["state"];
    return state == "discarded" || state == "dead" || state == "completed" || state == "retryable";
  }, 60));
  const auto job = api.get("/ojs/v1/jobs/" + id).body["job"];
  EXPECT_TRUE(job["state"] == "discarded" || job["state"] == "dead") << job.dump();
  EXPECT_NE(job.dump().find("oom_killed"), std::string::npos) << job.dump();
  EXPECT_NE(job.dump().find("memory limit of 0.5 GB"), std::string::npos) << job.dump();
}

// A job asking for a CUDA version (its node selector on nvidia.com/cuda-version) gets
// the worker's library directory of that version read-only at /usr/local/cuda-<v>.
TEST(JobIsolation, ARequestedCudaVersionIsMountedReadOnly) {
  REQUIRE_KERNEL_SUPPORT();
  const std::string version = "99.1";  // no real CUDA has it: the test's mount point is its own
  const std::string target = "/usr/local/cuda-" + version;
  const bool target_existed = std::filesystem::exists(target);
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  const std::string libraries = make_temp_dir("cuda-libraries");
  std::filesystem::create_directories(libraries + "/lib64");
  std::ofstream(libraries + "/lib64/libcudart.so.99") << "fake cudart";
  const std::string probe = "ml.cuda=f=" + target + R"sh(/lib64/libcudart.so.99
if [ -e "$f" ]; then
  echo "content=$(cat "$f")"
  echo "write=$( (echo x >> "$f") 2>&1 | sed 's/.*: //')"
  echo "create=$( (touch "$(dirname "$f")/new") 2>&1 | sed 's/.*: //')"
else
  echo "content=absent"
fi
echo "ld=$LD_LIBRARY_PATH"
)sh";
  IsolatedWorker worker(broker.url(), {{"mode", "on"}, {"cuda_libraries", {{version, libraries}}}}, {probe});
  const json asks = {{"ext_ml_node_selector", {{"nvidia.com/cuda-version", version}}}};
  const auto job = wait_for_state(api, api.push(job_of("ml.cuda", asks)), "completed");
  ASSERT_EQ(job["state"], "completed") << job.dump();
  auto seen = probe_result(job);
  EXPECT_EQ(seen["content"], "fake cudart");
  EXPECT_EQ(seen["write"], "Read-only file system");
  EXPECT_EQ(seen["create"], "Read-only file system");
  EXPECT_EQ(seen["ld"].rfind(target + "/lib64", 0), 0u) << seen["ld"];
  std::ifstream library(libraries + "/lib64/libcudart.so.99");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(library), {}), "fake cudart") << "the host's file is unchanged";

  const auto plain = wait_for_state(api, api.push(job_of("ml.cuda", json::object())), "completed");
  auto plain_seen = probe_result(plain);
  EXPECT_EQ(plain_seen["content"], "absent") << "a job that asks for no CUDA version does not see it";
  EXPECT_EQ(plain_seen["ld"].find(target), std::string::npos) << plain_seen["ld"];

  // The advertised version is the map's: a version the worker lacks is not placed here.
  const auto workers = api.get("/ojs/v1/admin/workers").body;
  ASSERT_FALSE(workers["items"].empty());
  EXPECT_EQ(workers["items"][0]["capabilities"]["labels"]["nvidia.com/cuda-version"], version);
  const auto other = api.push(job_of("ml.cuda", {{"ext_ml_node_selector", {{"nvidia.com/cuda-version", "98.0"}}}}));
  sleep_ms(2000);
  EXPECT_EQ(api.get("/ojs/v1/jobs/" + other).body["job"]["state"], "available") << "placed on a worker without CUDA 98.0";
  worker.agent.reset();
  if (!target_existed) ::rmdir(target.c_str());
}
