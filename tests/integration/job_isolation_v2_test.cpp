// Job isolation in cgroup v2 (`isolation.cgroup_version v2`) by the real worker
// agent run as root, with a real broker and Redis: the agent moves itself into a
// leaf of its own cgroup (<own>/ojs/agent) and each job runs in its own leaf below
// <own>/ojs/<worker>-<pid>, confined by the device BPF program (its own GPU's node
// opens as far as the driver, ENXIO; a forged node of another GPU is refused, EPERM),
// what a job leaves behind is killed with its cgroup (cgroup.kill) and the directory
// removed, and a restarted agent removes what a dead run left. On a hybrid host (v1
// holds memory, cpuset and pids) the v2 mount is systemd's /sys/fs/cgroup/unified;
// there the agent under `mode on` refuses to start for the missing controllers, and
// the limit tests (memory.max, cpuset.cpus, pids.max, the OOM kill from
// memory.events) are reported skipped with the controllers the hierarchy offers.
// ctest-per-test: integration.job_isolation_v2.
// ctest-skip-without: root-cgroups
// ctest-timeout: 300
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/isolated_worker.hpp"

using nlohmann::json;
using namespace ojs::test;
namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

// The cgroup2 mount: /sys/fs/cgroup on a unified host, /sys/fs/cgroup/unified beside v1.
std::string v2_mount() {
  if (fs::exists("/sys/fs/cgroup/cgroup.controllers")) return "/sys/fs/cgroup";
  if (fs::exists("/sys/fs/cgroup/unified/cgroup.controllers")) return "/sys/fs/cgroup/unified";
  return "";
}

// The tests' own cgroup there ("/": the root), which the agent they start begins in.
std::string own_v2_path() {
  std::ifstream self("/proc/self/cgroup");
  for (std::string line; std::getline(self, line);)
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  return "/";
}

fs::path own_v2_cgroup() {
  const auto own = fs::path(own_v2_path()).relative_path();
  return own.empty() ? fs::path(v2_mount()) : fs::path(v2_mount()) / own;
}

std::string kernel_refuses() {
  if (::geteuid() != 0) return "the tests run as uid " + std::to_string(::geteuid()) + ", not root";
  if (v2_mount().empty()) return "no cgroup2 hierarchy at /sys/fs/cgroup or /sys/fs/cgroup/unified";
  return mount_namespace_refused();
}

// Why a job's limit of this controller cannot be proven here ("" when it can).
std::string controller_missing(const std::string& controller) {
  if (auto why = kernel_refuses(); !why.empty()) return why;
  const auto offered = read_text(own_v2_cgroup() / "cgroup.controllers");
  std::stringstream words(offered);
  bool offered_here = false;
  for (std::string w; words >> w;) offered_here = offered_here || w == controller;
  // The agent the test starts begins in the tests' cgroup and must enable the
  // controller there; v2 allows it in a cgroup holding processes (the tests') only at the root.
  if (offered_here && own_v2_path() != "/")
    return "the tests run in " + own_v2_cgroup().string() + ", not the cgroup2 root: it holds the test process, so v2 lets " +
           "no " + controller + " be enabled there for the agent's tree (run the tests from the root of a cgroup namespace)";
  if (offered_here) return "";
  const std::string v1 = "/sys/fs/cgroup/" + controller;
  return "the cgroup2 hierarchy at " + v2_mount() + " does not offer " + controller + " to the tests' cgroup (" +
         (own_v2_cgroup() / "cgroup.controllers").string() + ": \"" + offered + "\"): " +
         (fs::exists(v1 + "/cgroup.procs") ? "this host binds it to cgroup v1 (" + v1 + ")" : "it is not delegated to the tests") +
         ", so a v2 " + controller + " limit cannot be applied here";
}

#define REQUIRE(why_not)                                          \
  do {                                                            \
    if (const auto why = (why_not); !why.empty()) GTEST_SKIP() << why; \
  } while (0)

bool process_gone(pid_t pid) {  // exited (a zombie nobody reaped counts as gone)
  if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
  const auto stat = read_text("/proc/" + std::to_string(pid) + "/stat");
  const auto close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z';
}

// What the probe job reports: its v2 cgroup, membership, limits, /dev, device checks.
std::string probe_command() {
  return "ml.probe=V2=" + v2_mount() + R"sh(
c=$(grep '^0::' /proc/self/cgroup | cut -d: -f3)
echo "cgroup=$c"
if grep -qx "$$" "$V2$c/cgroup.procs"; then echo "member=yes"; else echo "member=no"; fi
echo "mem_limit=$(cat $V2$c/memory.max 2>/dev/null)"
echo "swap_max=$(cat $V2$c/memory.swap.max 2>/dev/null)"
echo "pids_max=$(cat $V2$c/pids.max 2>/dev/null)"
)sh" + kDeviceProbe + R"sh(
setsid sleep 300 >/dev/null 2>&1 &
echo "leftover=$!"
)sh";
}

struct V2Worker : IsolatedWorker {
  explicit V2Worker(const std::string& broker_url, const std::string& mode = "auto")
      : IsolatedWorker(broker_url, {{"mode", mode}, {"cgroup_version", "v2"}},
                       {probe_command(), "ml.hog=python3 -c 'b = bytearray(1500 * 1000 * 1000); print(len(b))'"}) {}
};

struct Stack {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
};

json run_probe(Stack& stack, const json& attrs) {
  const auto id = stack.api.push(isolated_job("ml.probe", attrs));
  return wait_for_state(stack.api, id, "completed");
}

}  // namespace

TEST(JobIsolationV2, AGpuJobRunsInItsOwnCgroupAndSeesOnlyItsGpu) {
  REQUIRE(kernel_refuses());
  Stack stack;
  V2Worker worker(stack.broker.url());
  const auto job = run_probe(stack, {{"ext_ml_gpu_count", 1}});
  ASSERT_EQ(job["state"], "completed") << job.dump();
  const int mine = job["ext_ml_assigned_devices"][0];
  const int other = 1 - mine;
  auto seen = probe_result(job);
  EXPECT_NE(seen["cgroup"].find("/ojs/isolated-"), std::string::npos) << seen["cgroup"];
  EXPECT_EQ(seen["member"], "yes") << "the job's pid is in its cgroup's cgroup.procs";
  const auto agent_leaf = own_v2_cgroup() / "ojs" / "agent";
  EXPECT_FALSE(read_text(agent_leaf / "cgroup.procs").empty()) << "the agent lives in its own leaf " << agent_leaf;
  const std::string dev = " " + seen["dev"];
  EXPECT_NE(dev.find(" nvidia" + std::to_string(mine) + " "), std::string::npos) << dev;
  EXPECT_NE(dev.find(" nvidiactl "), std::string::npos) << dev;
  EXPECT_EQ(dev.find(" nvidia" + std::to_string(other) + " "), std::string::npos) << dev;
  EXPECT_EQ(seen["open" + std::to_string(mine)], "No such device or address") << "its own GPU passes the BPF device check";
  EXPECT_EQ(seen["open" + std::to_string(other)], "absent");
  EXPECT_TRUE(seen["forged"] == "Operation not permitted" || seen["forged"] == "mknod refused") << seen["forged"];
  const auto workers = stack.api.get("/ojs/v1/admin/workers").body;
  ASSERT_FALSE(workers["items"].empty());
  EXPECT_EQ(workers["items"][0]["capabilities"]["labels"]["ojs.io/isolation"], "cgroup-v2");
}

TEST(JobIsolationV2, AJobWithoutGpusCannotOpenAForgedGpuNode) {
  REQUIRE(kernel_refuses());
  Stack stack;
  V2Worker worker(stack.broker.url());
  auto seen = probe_result(run_probe(stack, json::object()));
  EXPECT_EQ(seen["dev"].find("nvidia"), std::string::npos) << seen["dev"];
  EXPECT_TRUE(seen["forged"] == "Operation not permitted" || seen["forged"] == "mknod refused") << seen["forged"];
}

TEST(JobIsolationV2, WhatAJobLeavesIsKilledAndItsCgroupRemoved) {
  REQUIRE(kernel_refuses());
  Stack stack;
  V2Worker worker(stack.broker.url());
  auto seen = probe_result(run_probe(stack, json::object()));
  const pid_t leftover = static_cast<pid_t>(std::stol(seen["leftover"].empty() ? "0" : seen["leftover"]));
  ASSERT_GT(leftover, 0) << "the job started a process in a session of its own";
  EXPECT_TRUE(wait_until([&] { return process_gone(leftover); }, 20)) << "pid " << leftover << " outlived its job";
  const auto job_dir = fs::path(v2_mount()) / fs::path(seen["cgroup"]).relative_path();
  EXPECT_TRUE(wait_until([&] { return !fs::exists(job_dir); }, 20)) << job_dir << " was not removed";
}

TEST(JobIsolationV2, ARestartedAgentRemovesWhatADeadRunLeft) {
  REQUIRE(kernel_refuses());
  pid_t dead = ::fork();  // a pid that no longer runs: the dead agent's
  if (dead == 0) _exit(0);
  ::waitpid(dead, nullptr, 0);
  const auto left = own_v2_cgroup() / "ojs" / ("isolated-" + std::to_string(dead)) / "job-1";
  fs::create_directories(left);
  const pid_t orphan = ::fork();  // a job process the dead run left
  if (orphan == 0) {
    std::ofstream(left / "cgroup.procs") << ::getpid() << std::flush;
    ::execlp("sleep", "sleep", "300", nullptr);
    _exit(127);
  }
  ASSERT_TRUE(wait_until([&] { return read_text(left / "cgroup.procs") == std::to_string(orphan); }, 10));
  Stack stack;
  V2Worker worker(stack.broker.url());
  EXPECT_TRUE(wait_until([&] { return !fs::exists(left.parent_path()); }, 30)) << left.parent_path() << " is still there";
  int status = 0;
  EXPECT_EQ(::waitpid(orphan, &status, 0), orphan);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the dead run's job was killed";
}

TEST(JobIsolationV2, ModeOnRefusesToStartWithoutTheLimitControllers) {
  REQUIRE(kernel_refuses());
  if (controller_missing("memory").empty() && controller_missing("cpuset").empty() && controller_missing("pids").empty())
    GTEST_SKIP() << "this host's cgroup v2 offers memory, cpuset and pids: no controller is missing to refuse for";
  const std::string dir = make_temp_dir("isolation-on");
  std::ofstream(dir + "/worker.json") << json{{"isolation", {{"mode", "on"}, {"cgroup_version", "v2"}}}}.dump();
  const auto run = run_process({binary_path("worker/worker"), "--broker", "http://127.0.0.1:9", "--config", dir + "/worker.json",
                                "--command", "x=true", "--once"},
                               60);
  EXPECT_NE(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("isolation is required (isolation.mode on) but no "), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("controller in cgroup v2"), std::string::npos) << run.output;
}

TEST(JobIsolationV2, AJobsMemoryIsLimitedWithoutSwap) {
  REQUIRE(controller_missing("memory"));
  Stack stack;
  V2Worker worker(stack.broker.url(), "on");
  auto seen = probe_result(run_probe(stack, {{"ext_ml_memory_gb", 1}}));
  EXPECT_NEAR(std::stod(seen["mem_limit"].empty() ? "0" : seen["mem_limit"]), 1e9, 4096) << seen["mem_limit"];
  EXPECT_TRUE(seen["swap_max"] == "0" || seen["swap_max"].empty()) << "no swap, or swap not accounted: " << seen["swap_max"];
}

TEST(JobIsolationV2, AJobRunsOnItsGpusNumaCpus) {
  REQUIRE(controller_missing("cpuset"));
  Stack stack;
  V2Worker worker(stack.broker.url(), "on");
  const auto job = run_probe(stack, {{"ext_ml_gpu_count", 1}});
  const int mine = job["ext_ml_assigned_devices"][0];
  EXPECT_EQ(probe_result(job)["cpus"], std::to_string(mine));
}

TEST(JobIsolationV2, AJobsPidsAreLimited) {
  REQUIRE(controller_missing("pids"));
  Stack stack;
  V2Worker worker(stack.broker.url(), "on");
  EXPECT_EQ(probe_result(run_probe(stack, json::object()))["pids_max"], "4096");
}

TEST(JobIsolationV2, AJobOverItsMemoryIsOomKilledAndFailed) {
  REQUIRE(controller_missing("memory"));
  Stack stack;
  V2Worker worker(stack.broker.url(), "on");
  const auto id = stack.api.push(isolated_job("ml.hog", {{"ext_ml_memory_gb", 0.5}, {"retry", {{"max_attempts", 1}}}}));
  ASSERT_TRUE(wait_until([&] {
    const auto state = stack.api.get("/ojs/v1/jobs/" + id).body["job"]["state"];
    return state == "discarded" || state == "dead" || state == "completed" || state == "retryable";
  }, 60));
  const auto job = stack.api.get("/ojs/v1/jobs/" + id).body["job"];
  EXPECT_TRUE(job["state"] == "discarded" || job["state"] == "dead") << job.dump();
  EXPECT_NE(job.dump().find("oom_killed"), std::string::npos) << job.dump();
}
