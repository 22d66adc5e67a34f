// The cgroup v2 device allow-list program (worker/isolation/device_filter.hpp), run
// here by a small interpreter of the instructions it uses, so its decisions are
// checked without root; the kernel runs it below and in integration.job_isolation_v2.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/bpf.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "worker/isolation/device_filter.hpp"

using ojs::worker::DeviceRule;
using ojs::worker::device_filter_program;
using ojs::worker::parse_device_rule;

namespace {

// Runs the program on one access as the kernel would; throws on an instruction the
// builder is not expected to emit.
int run(const std::vector<std::uint64_t>& program, bool block, int major, int minor, unsigned access) {
  const std::array<std::uint32_t, 3> ctx = {(access << 16) | (block ? BPF_DEVCG_DEV_BLOCK : BPF_DEVCG_DEV_CHAR),
                                            static_cast<std::uint32_t>(major), static_cast<std::uint32_t>(minor)};
  std::array<std::uint64_t, 11> r{};
  for (std::size_t pc = 0; pc < program.size(); ++pc) {
    bpf_insn i{};
    std::memcpy(&i, &program[pc], sizeof i);
    switch (i.code) {
      case BPF_LDX | BPF_MEM | BPF_W: r[i.dst_reg] = ctx.at(static_cast<std::size_t>(i.off) / 4); break;
      case BPF_ALU64 | BPF_MOV | BPF_X: r[i.dst_reg] = r[i.src_reg]; break;
      case BPF_ALU64 | BPF_MOV | BPF_K: r[i.dst_reg] = static_cast<std::uint64_t>(static_cast<std::int64_t>(i.imm)); break;
      case BPF_ALU64 | BPF_AND | BPF_K: r[i.dst_reg] &= static_cast<std::uint64_t>(static_cast<std::int64_t>(i.imm)); break;
      case BPF_ALU64 | BPF_RSH | BPF_K: r[i.dst_reg] >>= i.imm; break;
      case BPF_JMP | BPF_JNE | BPF_K:
        if (r[i.dst_reg] != static_cast<std::uint64_t>(static_cast<std::int64_t>(i.imm))) pc += static_cast<std::size_t>(i.off);
        break;
      case BPF_JMP | BPF_EXIT: return static_cast<int>(r[0]);
      default: throw std::logic_error("unexpected instruction");
    }
  }
  throw std::logic_error("ran off the end");
}

constexpr unsigned kRead = BPF_DEVCG_ACC_READ, kWrite = BPF_DEVCG_ACC_WRITE, kMknod = BPF_DEVCG_ACC_MKNOD;

}  // namespace

TEST(DeviceFilter, ParsesTheV1RuleSyntax) {
  const auto gpu = parse_device_rule("c 195:0 rwm");
  EXPECT_FALSE(gpu.block);
  EXPECT_EQ(gpu.major, 195);
  EXPECT_EQ(gpu.minor, 0);
  EXPECT_EQ(gpu.access, kRead | kWrite | kMknod);
  const auto ptys = parse_device_rule("c 136:* rw");
  EXPECT_EQ(ptys.minor, -1);
  EXPECT_EQ(parse_device_rule("b 8:* r").block, true);
  for (const char* bad : {"", "x 1:3 r", "c 1 r", "c a:3 r", "c 1:3 rx", "c 1:99999999 r"})
    EXPECT_THROW(parse_device_rule(bad), std::invalid_argument) << bad;
}

TEST(DeviceFilter, AllowsWhatARuleAllowsAndNothingElse) {
  const auto program = device_filter_program(
      {parse_device_rule("c 1:3 rwm"), parse_device_rule("c 136:* rw"), parse_device_rule("c 195:2 rw"), parse_device_rule("b 8:* r")});
  EXPECT_EQ(run(program, false, 1, 3, kRead | kWrite), 1);      // /dev/null
  EXPECT_EQ(run(program, false, 1, 5, kRead), 0);               // /dev/zero: no rule
  EXPECT_EQ(run(program, false, 136, 7, kRead | kWrite), 1);    // a pty, any minor
  EXPECT_EQ(run(program, false, 136, 7, kMknod), 0);            // but not made
  EXPECT_EQ(run(program, false, 195, 2, kRead | kWrite), 1);    // the job's GPU
  EXPECT_EQ(run(program, false, 195, 3, kRead | kWrite), 0);    // another GPU
  EXPECT_EQ(run(program, false, 195, 2, kMknod), 0);
  EXPECT_EQ(run(program, true, 8, 1, kRead), 1);                // a block device read
  EXPECT_EQ(run(program, true, 8, 1, kWrite), 0);
  EXPECT_EQ(run(program, false, 8, 1, kRead), 0);               // char 8:1 is not block 8:1
  EXPECT_EQ(run(device_filter_program({}), false, 1, 3, kRead), 0);  // no rule: nothing
}

// The kernel runs the program: a process in a cgroup with the filter opens /dev/null
// (allowed) and is refused /dev/zero (no rule). Needs root and a cgroup v2 hierarchy
// (/sys/fs/cgroup, or /sys/fs/cgroup/unified beside v1); its own ctest entry
// (worker.device_filter_kernel) reports a skip with the reason.
TEST(DeviceFilterKernel, TheKernelRefusesADeviceNoRuleAllows) {
  namespace fs = std::filesystem;
  if (::geteuid() != 0) GTEST_SKIP() << "not root: cannot make cgroups or load BPF programs";
  const std::string v2 = fs::exists("/sys/fs/cgroup/cgroup.controllers") ? "/sys/fs/cgroup"
                         : fs::exists("/sys/fs/cgroup/unified/cgroup.procs") ? "/sys/fs/cgroup/unified"
                                                                              : "";
  if (v2.empty()) GTEST_SKIP() << "no cgroup v2 hierarchy at /sys/fs/cgroup or /sys/fs/cgroup/unified";
  std::string own;
  std::ifstream self("/proc/self/cgroup");
  for (std::string line; std::getline(self, line);)
    if (line.rfind("0::", 0) == 0) own = line.substr(3);
  const fs::path dir = fs::path(v2) / fs::path(own).relative_path() / ("ojs-device-filter-test-" + std::to_string(::getpid()));
  ASSERT_TRUE(fs::create_directory(dir)) << dir;
  ojs::worker::attach_device_filter(dir.string(), {parse_device_rule("c 1:3 rwm")});
  const pid_t child = ::fork();
  if (child == 0) {
    std::ofstream(dir / "cgroup.procs") << ::getpid() << std::flush;
    const int null_fd = ::open("/dev/null", O_RDWR);
    const int zero_fd = ::open("/dev/zero", O_RDONLY);
    ::_exit(null_fd < 0 ? 10 : zero_fd >= 0 ? 11 : errno == EPERM ? 0 : 12);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ::rmdir(dir.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: /dev/null refused; 11: /dev/zero opened; 12: refused, but not with EPERM";
}
