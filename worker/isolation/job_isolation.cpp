#include "worker/isolation/job_isolation.hpp"

#include "worker/isolation/cgroup_hierarchy.hpp"
#include "worker/isolation/cuda_libraries.hpp"
#include "worker/isolation/device_filter.hpp"

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
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace ojs::worker {

namespace fs = std::filesystem;

namespace {

constexpr int kNvidiaMajor = 195;   // /dev/nvidia<N> and nvidiactl (minor 255): fixed by the driver
constexpr int kNvidiaCtlMinor = 255;
const char* const kV1Hierarchies[] = {"memory", "devices", "cpuset", "pids"};

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

// mkdir, and in v1's cpuset hierarchy the CPUs and memory nodes of the parent (a v1
// cpuset starts empty, and a task cannot join an empty one; v2's inherits them).
void make_cgroup_dir(const fs::path& dir, bool v1_cpuset) {
  std::error_code ec;
  if (!fs::create_directory(dir, ec) && ec) throw std::runtime_error("cannot create cgroup " + dir.string() + ": " + ec.message());
  if (!v1_cpuset) return;
  for (const char* file : {"cpuset.cpus", "cpuset.mems"})
    if (read_kernel_file(dir / file).empty()) write_value(dir / file, read_kernel_file(dir.parent_path() / file));
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
DevNode node(const std::string& dev_dir, const std::string& name, int major, int minor) {
  struct stat st {};
  if (::stat((fs::path(dev_dir) / name).c_str(), &st) == 0 && S_ISCHR(st.st_mode)) {
    major = static_cast<int>(::major(st.st_rdev));
    minor = static_cast<int>(::minor(st.st_rdev));
  }
  return {name, major, minor};
}

bool has_word(const std::string& list, const std::string& word) {
  std::stringstream words(list);
  for (std::string w; words >> w;)
    if (w == word) return true;
  return false;
}

// Kills what runs in a cgroup directory and removes it (its job directories first):
// cgroup.kill where the kernel has it (v2, 5.14+: no process escapes by forking
// meanwhile), else SIGKILL to each process in cgroup.procs until none is left.
void remove_cgroup_tree(const fs::path& dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.is_directory()) remove_cgroup_tree(entry.path());
  const bool has_kill = fs::exists(dir / "cgroup.kill");
  for (int attempt = 0; attempt < 100 && fs::exists(dir); ++attempt) {
    if (has_kill) {
      try {
        write_value(dir / "cgroup.kill", "1");
      } catch (const std::exception& e) {
        spdlog::debug("{}", e.what());
      }
    } else {
      for (std::stringstream pids(read_kernel_file(dir / "cgroup.procs")); pids.good();) {
        pid_t pid = 0;
        if (pids >> pid && pid > 0) ::kill(pid, SIGKILL);
      }
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
  std::set<std::string> dirs;  // v2: one directory for every controller
  for (const auto& [controller, dir] : parents_) dirs.insert(dir);
  for (const auto& dir : dirs) remove_cgroup_tree(dir);
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
  const CgroupHost host = read_cgroup_host();
  std::string why_not;
  const std::string version = choose_cgroup_version(host, config.cgroup_version, &why_not);
  if (version.empty()) return off(why_not);
  auto isolation = std::unique_ptr<JobIsolation>(new JobIsolation());
  isolation->config_ = config;
  isolation->launcher_ = launcher;
  isolation->version_ = version;
  isolation->mode_ = "cgroup-" + version;
  try {
    if (version == "v1") {
      isolation->set_up_v1(worker_id);
    } else {
      // The cgroup root itself when it is the cgroup2 mount (a unified host), else the
      // cgroup2 mount beside v1 (a hybrid one).
      const bool unified_root = fs::exists(fs::path(config.cgroup_root) / "cgroup.controllers");
      isolation->set_up_v2(unified_root ? config.cgroup_root : host.v2_mount, host.v2_own, worker_id);
    }
  } catch (const std::exception& e) {
    return off(e.what());
  }
  // One rule for both versions: the device allow-list and the private /dev are what
  // isolation is (without them it is off); a limit whose controller the host lacks
  // is named here, refuses the start under mode on, and is not applied under auto.
  if (!isolation->missing_.empty()) {
    std::string missing;
    std::map<std::string, std::string> by_reason;  // reason -> its controllers: one host cause is said once
    for (const auto& [controller, reason] : isolation->missing_) {
      missing += (missing.empty() ? "" : ", ") + controller;
      auto& controllers = by_reason[reason];
      controllers += (controllers.empty() ? "" : ", ") + controller;
    }
    std::string why;
    for (const auto& [reason, controllers] : by_reason) why += (why.empty() ? "" : "; ") + controllers + ": " + reason;
    const std::string message = "no " + missing + " controller in cgroup " + version + " (" + why +
                                "): jobs run without the " + missing + " limit(s)";
    if (config.mode == "on") throw std::runtime_error("isolation is required (isolation.mode on) but " + message);
    spdlog::warn("{}", message);
  }
  isolation->uvm_major_ = major_of("nvidia-uvm");
  isolation->caps_major_ = major_of("nvidia-caps");
  return isolation;
}

void JobIsolation::set_up_v1(const std::string& worker_id) {
  const fs::path root = config_.cgroup_root;
  if (!fs::exists(root / "devices" / "cgroup.procs"))
    throw std::runtime_error("no cgroup v1 devices hierarchy under " + root.string() + " (the device allow-list needs it)");
  for (const char* h : kV1Hierarchies) {
    if (!fs::exists(root / h / "cgroup.procs")) {
      missing_.emplace_back(h, "no cgroup v1 hierarchy under " + root.string());
      continue;
    }
    const bool cpuset = std::string(h) == "cpuset";
    const fs::path base = root / h / fs::path(own_cgroup(h)).relative_path() / "ojs";
    if (!fs::exists(base)) make_cgroup_dir(base, cpuset);
    remove_dead_runs(base);
    // One directory per run of the agent (several agents may share a host, and a
    // restarted one finds what its dead predecessor left by the pid in the name).
    const fs::path dir = base / (safe_name(worker_id) + "-" + std::to_string(::getpid()));
    if (!fs::exists(dir)) make_cgroup_dir(dir, cpuset);
    parents_[h] = dir.string();
  }
}

// The agent's own cgroup is the subtree delegated to it. v2 lets a cgroup pass
// controllers to its children only while it holds no process itself, so the agent
// moves into a leaf of its own (<own>/ojs/agent) and each level down to this run's
// directory enables the controllers; each job's directory is a leaf below that.
void JobIsolation::set_up_v2(const std::string& v2_root, const std::string& own, const std::string& worker_id) {
  std::string own_path = own;
  if (const std::string leaf = "/ojs/agent"; own_path.size() >= leaf.size() && own_path.ends_with(leaf))
    own_path.resize(own_path.size() - leaf.size());  // already in its leaf (set up before, this process)
  const fs::path own_dir = fs::path(v2_root) / fs::path(own_path).relative_path();
  const fs::path base = own_dir / "ojs";
  if (!fs::exists(base)) make_cgroup_dir(base, false);
  if (!fs::exists(base / "agent")) make_cgroup_dir(base / "agent", false);
  write_value(base / "agent" / "cgroup.procs", std::to_string(::getpid()));
  remove_dead_runs(base);
  const fs::path dir = base / (safe_name(worker_id) + "-" + std::to_string(::getpid()));
  if (!fs::exists(dir)) make_cgroup_dir(dir, false);
  parents_["devices"] = dir.string();  // before anything can throw: the destructor removes it
  for (const char* controller : kLimitControllers) {
    std::string why;
    for (const fs::path& level : {own_dir, base, dir}) {
      if (!has_word(read_kernel_file(level / "cgroup.controllers"), controller)) {
        why = "not in " + (level / "cgroup.controllers").string() + " (\"" + read_kernel_file(level / "cgroup.controllers") +
              "\": bound to cgroup v1, or not delegated to the agent)";
        break;
      }
      if (has_word(read_kernel_file(level / "cgroup.subtree_control"), controller)) continue;
      try {
        write_value(level / "cgroup.subtree_control", std::string("+") + controller);
      } catch (const std::exception& e) {
        why = std::string(e.what()) + " (a cgroup holding processes cannot enable controllers for its children)";
        break;
      }
    }
    if (why.empty()) parents_[controller] = dir.string();
    else missing_.emplace_back(controller, why);
  }
  // The device allow-list is a BPF program on each job's cgroup: proved loadable here,
  // on this run's directory, with one that allows every device.
  attach_device_filter(dir.string(), {parse_device_rule("c *:* rwm"), parse_device_rule("b *:* rwm")});
}

std::vector<std::string> JobIsolation::controllers() const {
  std::vector<std::string> out;
  for (const auto& [controller, dir] : parents_) out.push_back(controller);
  return out;
}

std::string JobIsolation::cpus_of(const std::set<int>& numa_nodes) const {
  std::string out;
  for (const int n : numa_nodes) {
    const auto configured = config_.numa_cpus.find(n);
    const std::string cpus = configured != config_.numa_cpus.end()
                                 ? configured->second
                                 : read_kernel_file("/sys/devices/system/node/node" + std::to_string(n) + "/cpulist");
    if (cpus.empty()) return "";  // one node unknown: no pinning rather than a wrong one
    out += (out.empty() ? "" : ",") + cpus;
  }
  return out;
}

std::unique_ptr<JobCgroup> JobIsolation::prepare(const std::string& name, const JobLimits& limits, const std::string& cuda_version) const {
  const bool v2 = version_ == "v2";
  const auto cuda = cuda_mount(config_.cuda_libraries, cuda_version);  // before any directory: a refusal leaves none
  auto cgroup = std::unique_ptr<JobCgroup>(new JobCgroup());
  nlohmann::json procs = nlohmann::json::array();
  std::set<std::string> made;
  for (const auto& [controller, parent] : parents_) {
    if (!made.insert(parent).second) continue;  // v2: one directory for every controller
    const fs::path dir = fs::path(parent) / name;
    if (fs::exists(dir)) remove_cgroup_tree(dir);  // a retried attempt's leftover
    make_cgroup_dir(dir, !v2 && controller == "cpuset");
    cgroup->dirs_.push_back(dir.string());
    procs.push_back((dir / "cgroup.procs").string());
  }
  const auto dir_of = [&](const std::string& controller) { return fs::path(parents_.at(controller)) / name; };
  const std::string cpus = parents_.count("cpuset") ? cpus_of(limits.numa_nodes) : "";
  for (const auto& write : limit_writes(version_, limits, cpus, config_.pids_max)) {
    if (!parents_.count(write.controller)) continue;  // the host lacks it: said at start
    const fs::path file = dir_of(write.controller) / write.file;
    if (write.optional && !fs::exists(file)) continue;
    try {
      write_value(file, write.value);
    } catch (const std::exception& e) {
      if (!write.optional) throw;
      spdlog::warn("job cgroup {}: {} ({})", name, e.what(),
                   write.controller == "cpuset" ? "its GPUs' NUMA CPUs are outside the worker's: it runs on the worker's CPUs"
                                                : "its swap is not limited");
    }
  }
  if (parents_.count("memory")) {
    cgroup->oom_counter_file_ = (dir_of("memory") / (v2 ? "memory.events" : "memory.oom_control")).string();
    cgroup->memory_limit_ = limits.memory_bytes;
  }
  if (parents_.count("cpuset")) cgroup->cpus_ = read_kernel_file(dir_of("cpuset") / (v2 ? "cpuset.cpus.effective" : "cpuset.cpus"));

  // Device allow-list: nothing but the standard nodes and the job's own GPUs.
  std::vector<DevNode> nodes;
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
  }
  const auto rules = device_allow_rules(nodes, mig, caps_major_);
  if (v2) {
    std::vector<DeviceRule> parsed;
    for (const auto& rule : rules) parsed.push_back(parse_device_rule(rule));
    attach_device_filter(dir_of("devices").string(), parsed);
  } else {
    write_value(dir_of("devices") / "devices.deny", "a");
    for (const auto& rule : rules) write_value(dir_of("devices") / "devices.allow", rule);
  }
  nlohmann::json dev_nodes = nlohmann::json::array();
  for (const auto& n : nodes) dev_nodes.push_back({{"name", n.name}, {"major", n.major}, {"minor", n.minor}});
  cgroup->plan_ = {{"procs", procs}, {"dev_nodes", dev_nodes}};
  if (cuda) cgroup->plan_["cuda_libraries"] = {{"source", cuda->source}, {"target", cuda->target}, {"lib_dir", cuda->lib_dir}};
  return cgroup;
}

std::vector<std::string> JobIsolation::wrap(const std::vector<std::string>& argv, const std::string& plan_file) const {
  std::vector<std::string> out = {launcher_, "--exec-isolated", plan_file, "--"};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

// Both files are "key value" lines; oom_kill counts the processes the OOM killer took.
bool JobCgroup::oom_killed() const {
  if (oom_counter_file_.empty()) return false;
  std::ifstream in(oom_counter_file_);
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
  // The CUDA libraries it asked for, read-only: it can use them, not change them. The
  // mount is private to the job's namespace; its mount point is made on the host when missing.
  if (const auto cuda = plan.find("cuda_libraries"); cuda != plan.end()) {
    const auto source = cuda->at("source").get<std::string>(), target = cuda->at("target").get<std::string>();
    std::error_code ec;
    fs::create_directories(target, ec);
    if (::mount(source.c_str(), target.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
      return fail("bind-mounting " + source + " at " + target);
    if (::mount(nullptr, target.c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, nullptr) != 0)
      return fail("making " + target + " read-only");
    const char* inherited = std::getenv("LD_LIBRARY_PATH");
    const std::string lib_dir = cuda->at("lib_dir").get<std::string>();
    ::setenv("LD_LIBRARY_PATH", (inherited && *inherited ? lib_dir + ":" + inherited : lib_dir).c_str(), 1);
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  ::execvp(args[0], args.data());
  std::cerr << "ojs worker: cannot start " << argv[0] << ": " << std::strerror(errno) << std::endl;
  return 127;
}

}  // namespace ojs::worker
