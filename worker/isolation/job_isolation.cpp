#include "worker/isolation/job_isolation.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace ojs::worker {

namespace fs = std::filesystem;

namespace {

constexpr int kNvidiaMajor = 195;   // /dev/nvidia<N> and nvidiactl (minor 255): fixed by the driver
constexpr int kNvidiaCtlMinor = 255;
const char* const kHierarchies[] = {"memory", "devices", "cpuset", "pids"};

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

// Writes one value to a cgroup file; throws naming the file and the kernel's answer.
void write_value(const fs::path& path, const std::string& value) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot open " + path.string() + ": " + std::strerror(errno));
  const ssize_t n = ::write(fd, value.data(), value.size());
  const int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(value.size()))
    throw std::runtime_error("cannot write '" + value + "' to " + path.string() + ": " + std::strerror(err));
}

// The agent's own cgroup in a v1 hierarchy (from /proc/self/cgroup), "/" when not listed.
std::string own_cgroup(const std::string& hierarchy) {
  std::ifstream in("/proc/self/cgroup");
  for (std::string line; std::getline(in, line);) {
    const auto first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    std::stringstream controllers(line.substr(first + 1, second - first - 1));
    for (std::string c; std::getline(controllers, c, ',');)
      if (c == hierarchy) return line.substr(second + 1);
  }
  return "/";
}

// mkdir, and for cpuset the CPUs and memory nodes of the parent (a v1 cpuset starts
// empty, and a task cannot join an empty one).
void make_cgroup_dir(const std::string& hierarchy, const fs::path& dir) {
  std::error_code ec;
  if (!fs::create_directory(dir, ec) && ec) throw std::runtime_error("cannot create cgroup " + dir.string() + ": " + ec.message());
  if (hierarchy != "cpuset") return;
  for (const char* file : {"cpuset.cpus", "cpuset.mems"})
    if (read_text(dir / file).empty()) write_value(dir / file, read_text(dir.parent_path() / file));
}

int major_of(const std::string& driver) {  // from /proc/devices; -1 when absent
  std::ifstream in("/proc/devices");
  for (std::string line; std::getline(in, line);) {
    std::stringstream s(line);
    int major = -1;
    std::string name;
    if (s >> major >> name && name == driver) return major;
  }
  return -1;
}

std::string safe_name(const std::string& text) {
  std::string out;
  for (const char c : text) out.push_back(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' ? c : '_');
  return out.empty() ? std::string("worker") : out;
}

// A device node for the job's /dev: the host's own numbers when it has the node, else
// the driver's fixed ones (195:<minor> for /dev/nvidia<minor>).
nlohmann::json node(const std::string& dev_dir, const std::string& name, int major, int minor) {
  struct stat st {};
  if (::stat((fs::path(dev_dir) / name).c_str(), &st) == 0 && S_ISCHR(st.st_mode)) {
    major = static_cast<int>(::major(st.st_rdev));
    minor = static_cast<int>(::minor(st.st_rdev));
  }
  return {{"name", name}, {"major", major}, {"minor", minor}};
}

// Kills what runs in a cgroup directory and removes it (its job directories first).
void remove_cgroup_tree(const fs::path& dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.is_directory()) remove_cgroup_tree(entry.path());
  for (int attempt = 0; attempt < 100 && fs::exists(dir); ++attempt) {
    for (std::stringstream pids(read_text(dir / "cgroup.procs")); pids.good();) {
      pid_t pid = 0;
      if (pids >> pid && pid > 0) ::kill(pid, SIGKILL);
    }
    if (fs::remove(dir, ec)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (fs::exists(dir)) spdlog::warn("cgroup {} could not be removed: {}", dir.string(), ec.message());
}

// The directories of agent runs whose process is gone (named <worker>-<pid>): what
// their jobs left running is killed, and the directories go.
void remove_dead_runs(const fs::path& base) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(base, ec)) {
    if (!entry.is_directory()) continue;
    const auto name = entry.path().filename().string();
    const auto dash = name.rfind('-');
    if (dash == std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::strtol(name.c_str() + dash + 1, nullptr, 10));
    if (pid <= 0 || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
    remove_cgroup_tree(entry.path());
  }
}

}  // namespace

JobIsolation::~JobIsolation() {
  for (const auto& [hierarchy, dir] : parents_) remove_cgroup_tree(dir);
}

std::unique_ptr<JobIsolation> JobIsolation::create(const IsolationConfig& config, const std::string& launcher,
                                                   const std::string& worker_id, std::string* why_off) {
  const auto off = [&](const std::string& why) -> std::unique_ptr<JobIsolation> {
    if (config.mode == "on") throw std::runtime_error("isolation is required (isolation.mode on) but " + why);
    if (why_off) *why_off = why;
    return nullptr;
  };
  if (config.mode == "off") return off("isolation.mode is off in the worker config");
  if (::geteuid() != 0) return off("the agent does not run as root (cgroups and mount namespaces need it)");
  const fs::path root = config.cgroup_root;
  for (const char* h : kHierarchies)
    if (!fs::exists(root / h / "cgroup.procs")) {
      if (fs::exists(root / "cgroup.controllers"))
        return off("the host has cgroup v2 only: the device allow-list needs a BPF program, which this agent does not load");
      return off(std::string("no cgroup v1 ") + h + " hierarchy under " + root.string());
    }
  auto isolation = std::unique_ptr<JobIsolation>(new JobIsolation());
  isolation->config_ = config;
  isolation->launcher_ = launcher;
  isolation->mode_ = "cgroup-v1";
  try {
    for (const char* h : kHierarchies) {
      const fs::path base = root / h / fs::path(own_cgroup(h)).relative_path() / "ojs";
      if (!fs::exists(base)) make_cgroup_dir(h, base);
      remove_dead_runs(base);
      // One directory per run of the agent (several agents may share a host, and a
      // restarted one finds what its dead predecessor left by the pid in the name).
      const fs::path dir = base / (safe_name(worker_id) + "-" + std::to_string(::getpid()));
      if (!fs::exists(dir)) make_cgroup_dir(h, dir);
      isolation->parents_[h] = dir.string();
    }
  } catch (const std::exception& e) {
    return off(e.what());
  }
  isolation->uvm_major_ = major_of("nvidia-uvm");
  isolation->caps_major_ = major_of("nvidia-caps");
  return isolation;
}

std::string JobIsolation::cpus_of(const std::set<int>& numa_nodes) const {
  std::string out;
  for (const int n : numa_nodes) {
    const auto configured = config_.numa_cpus.find(n);
    const std::string cpus = configured != config_.numa_cpus.end()
                                 ? configured->second
                                 : read_text("/sys/devices/system/node/node" + std::to_string(n) + "/cpulist");
    if (cpus.empty()) return "";  // one node unknown: no pinning rather than a wrong one
    out += (out.empty() ? "" : ",") + cpus;
  }
  return out;
}

std::unique_ptr<JobCgroup> JobIsolation::prepare(const std::string& name, const JobLimits& limits) const {
  auto cgroup = std::unique_ptr<JobCgroup>(new JobCgroup());
  nlohmann::json procs = nlohmann::json::array();
  for (const auto& [hierarchy, parent] : parents_) {
    const fs::path dir = fs::path(parent) / name;
    if (fs::exists(dir)) {
      std::error_code ec;
      fs::remove(dir, ec);
    }
    make_cgroup_dir(hierarchy, dir);
    cgroup->dirs_.push_back(dir.string());
    procs.push_back((dir / "cgroup.procs").string());
  }
  const fs::path memory = fs::path(parents_.at("memory")) / name;
  cgroup->memory_dir_ = memory.string();
  if (limits.memory_bytes) {
    write_value(memory / "memory.limit_in_bytes", std::to_string(*limits.memory_bytes));
    // With swap accounting the limit covers swap too: over it the job is OOM-killed, not swapped.
    if (fs::exists(memory / "memory.memsw.limit_in_bytes")) {
      try {
        write_value(memory / "memory.memsw.limit_in_bytes", std::to_string(*limits.memory_bytes));
      } catch (const std::exception& e) {
        spdlog::warn("job cgroup {}: {} (swap is not limited)", name, e.what());
      }
    }
    cgroup->memory_limit_ = limits.memory_bytes;
  }
  write_value(fs::path(parents_.at("pids")) / name / "pids.max", std::to_string(config_.pids_max));
  const fs::path cpuset = fs::path(parents_.at("cpuset")) / name;
  if (const auto cpus = cpus_of(limits.numa_nodes); !cpus.empty()) {
    try {
      write_value(cpuset / "cpuset.cpus", cpus);
    } catch (const std::exception& e) {  // CPUs outside the worker's own set: the worker's set stands
      spdlog::warn("job cgroup {}: CPUs {} of its GPUs' NUMA node(s) refused ({}); it runs on the worker's CPUs", name, cpus, e.what());
    }
  }
  cgroup->cpus_ = read_text(cpuset / "cpuset.cpus");

  // Device allow-list: nothing but the standard nodes and the job's own GPUs.
  const fs::path devices = fs::path(parents_.at("devices")) / name;
  write_value(devices / "devices.deny", "a");
  std::vector<std::string> allowed = {"c 1:3 rwm", "c 1:5 rwm", "c 1:7 rwm", "c 1:8 rwm", "c 1:9 rwm", "c 5:0 rwm",
                                      "c 5:1 rwm", "c 5:2 rwm", "c 136:* rwm"};
  nlohmann::json nodes = nlohmann::json::array();
  bool mig = false;
  for (const auto& gpu : limits.gpus) {
    nodes.push_back(node(config_.dev_dir, "nvidia" + std::to_string(gpu.minor), kNvidiaMajor, gpu.minor));
    mig = mig || gpu.mig;
  }
  if (!limits.gpus.empty()) {
    nodes.push_back(node(config_.dev_dir, "nvidiactl", kNvidiaMajor, kNvidiaCtlMinor));
    if (uvm_major_ >= 0) {
      nodes.push_back(node(config_.dev_dir, "nvidia-uvm", uvm_major_, 0));
      nodes.push_back(node(config_.dev_dir, "nvidia-uvm-tools", uvm_major_, 1));
    }
    if (mig && caps_major_ >= 0) allowed.push_back("c " + std::to_string(caps_major_) + ":* r");  // MIG capability nodes
  }
  for (const auto& n : nodes)
    allowed.push_back("c " + std::to_string(n["major"].get<int>()) + ":" + std::to_string(n["minor"].get<int>()) + " rwm");
  for (const auto& rule : allowed) write_value(devices / "devices.allow", rule);
  cgroup->plan_ = {{"procs", procs}, {"dev_nodes", nodes}};
  return cgroup;
}

std::vector<std::string> JobIsolation::wrap(const std::vector<std::string>& argv, const std::string& plan_file) const {
  std::vector<std::string> out = {launcher_, "--exec-isolated", plan_file, "--"};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

bool JobCgroup::oom_killed() const {
  std::ifstream in(fs::path(memory_dir_) / "memory.oom_control");
  for (std::string key; in >> key;) {
    long long value = 0;
    if (!(in >> value)) break;
    if (key == "oom_kill") return value > 0;
  }
  return false;
}

JobCgroup::~JobCgroup() {
  for (const auto& dir : dirs_) remove_cgroup_tree(dir);
}

int run_isolated(const std::string& plan_file, const std::vector<std::string>& argv) {
  const auto fail = [](const std::string& what) {
    std::cerr << "ojs worker: job isolation failed: " << what << ": " << std::strerror(errno) << std::endl;
    return 125;
  };
  if (argv.empty()) return fail("no command");
  nlohmann::json plan;
  try {
    std::ifstream in(plan_file);
    plan = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    std::cerr << "ojs worker: cannot read isolation plan " << plan_file << ": " << e.what() << std::endl;
    return 125;
  }
  const std::string pid = std::to_string(::getpid());
  for (const auto& procs : plan.value("procs", nlohmann::json::array())) {
    const std::string path = procs.get<std::string>();
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0 || ::write(fd, pid.data(), pid.size()) != static_cast<ssize_t>(pid.size())) return fail("joining " + path);
    ::close(fd);
  }
  // A private /dev: the standard nodes, a private /dev/shm, and the job's GPUs only.
  if (::unshare(CLONE_NEWNS) != 0) return fail("unshare(CLONE_NEWNS)");
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return fail("making / private");
  if (::mount("ojs-dev", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=755") != 0) return fail("mounting /dev");
  ::umask(0);
  struct Node {
    std::string name;
    int major, minor;
  };
  std::vector<Node> nodes = {{"null", 1, 3}, {"zero", 1, 5}, {"full", 1, 7}, {"random", 1, 8}, {"urandom", 1, 9}, {"tty", 5, 0}};
  for (const auto& n : plan.value("dev_nodes", nlohmann::json::array()))
    nodes.push_back({n["name"].get<std::string>(), n["major"].get<int>(), n["minor"].get<int>()});
  for (const auto& n : nodes)
    if (::mknod(("/dev/" + n.name).c_str(), S_IFCHR | 0666, makedev(n.major, n.minor)) != 0) return fail("mknod /dev/" + n.name);
  for (const auto& [link, target] : std::vector<std::pair<std::string, std::string>>{
           {"fd", "/proc/self/fd"}, {"stdin", "/proc/self/fd/0"}, {"stdout", "/proc/self/fd/1"}, {"stderr", "/proc/self/fd/2"}})
    if (::symlink(target.c_str(), ("/dev/" + link).c_str()) != 0) return fail("symlink /dev/" + link);
  if (::mkdir("/dev/shm", 01777) != 0 || ::mount("ojs-shm", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") != 0)
    return fail("mounting /dev/shm");
  ::umask(022);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  ::execvp(args[0], args.data());
  std::cerr << "ojs worker: cannot start " << argv[0] << ": " << std::strerror(errno) << std::endl;
  return 127;
}

}  // namespace ojs::worker
