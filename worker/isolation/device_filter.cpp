#include "worker/isolation/device_filter.hpp"

#include <fcntl.h>
#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace ojs::worker {

namespace {

// One instruction: opcode, destination and source registers, offset, immediate.
std::uint64_t insn(std::uint8_t code, std::uint8_t dst, std::uint8_t src, std::int16_t off, std::int32_t imm) {
  bpf_insn i{};
  i.code = code;
  i.dst_reg = dst & 0xf;
  i.src_reg = src & 0xf;
  i.off = off;
  i.imm = imm;
  std::uint64_t out = 0;
  static_assert(sizeof(i) == sizeof(out));
  std::memcpy(&out, &i, sizeof out);
  return out;
}

constexpr std::uint8_t kLoadWord = BPF_LDX | BPF_MEM | BPF_W;
constexpr std::uint8_t kMoveReg = BPF_ALU64 | BPF_MOV | BPF_X;
constexpr std::uint8_t kMoveImm = BPF_ALU64 | BPF_MOV | BPF_K;
constexpr std::uint8_t kAndImm = BPF_ALU64 | BPF_AND | BPF_K;
constexpr std::uint8_t kShiftRightImm = BPF_ALU64 | BPF_RSH | BPF_K;
constexpr std::uint8_t kJumpIfNotImm = BPF_JMP | BPF_JNE | BPF_K;
constexpr std::uint8_t kExit = BPF_JMP | BPF_EXIT;

long bpf(int command, bpf_attr& attr) { return ::syscall(SYS_bpf, command, &attr, sizeof attr); }

}  // namespace

DeviceRule parse_device_rule(const std::string& text) {
  std::istringstream in(text);
  std::string type, numbers, access;
  if (!(in >> type >> numbers >> access) || (type != "c" && type != "b"))
    throw std::invalid_argument("device rule '" + text + "': want \"c|b MAJOR:MINOR ACCESS\"");
  DeviceRule rule;
  rule.block = type == "b";
  const auto colon = numbers.find(':');
  if (colon == std::string::npos) throw std::invalid_argument("device rule '" + text + "': MAJOR:MINOR");
  auto number = [&](const std::string& s) {
    if (s == "*") return -1;
    if (s.empty() || s.size() > 7 || s.find_first_not_of("0123456789") != std::string::npos)
      throw std::invalid_argument("device rule '" + text + "': '" + s + "' is not a device number or *");
    return std::stoi(s);
  };
  rule.major = number(numbers.substr(0, colon));
  rule.minor = number(numbers.substr(colon + 1));
  for (const char c : access) {
    if (c == 'm') rule.access |= BPF_DEVCG_ACC_MKNOD;
    else if (c == 'r') rule.access |= BPF_DEVCG_ACC_READ;
    else if (c == 'w') rule.access |= BPF_DEVCG_ACC_WRITE;
    else throw std::invalid_argument("device rule '" + text + "': access is made of r, w and m");
  }
  return rule;
}

std::vector<std::uint64_t> device_filter_program(const std::vector<DeviceRule>& rules) {
  // struct bpf_cgroup_dev_ctx { u32 access_type (access << 16 | type); u32 major; u32 minor; }
  std::vector<std::uint64_t> p = {
      insn(kLoadWord, 2, 1, 0, 0),     // r2 = access_type
      insn(kMoveReg, 3, 2, 0, 0),      // r3 = type
      insn(kAndImm, 3, 0, 0, 0xffff),
      insn(kMoveReg, 4, 2, 0, 0),      // r4 = access
      insn(kShiftRightImm, 4, 0, 0, 16),
      insn(kLoadWord, 5, 1, 4, 0),     // r5 = major
      insn(kLoadWord, 6, 1, 8, 0),     // r6 = minor
  };
  for (const auto& rule : rules) {
    // A block: each test jumps past the block's end when the rule does not match.
    std::vector<std::pair<std::uint8_t, std::int32_t>> tests;  // register, value it must hold
    tests.push_back({3, rule.block ? BPF_DEVCG_DEV_BLOCK : BPF_DEVCG_DEV_CHAR});
    if (rule.major >= 0) tests.push_back({5, rule.major});
    if (rule.minor >= 0) tests.push_back({6, rule.minor});
    const int after_tests = 5;  // r7 = access & ~allowed; jne r7 0; r0 = 1; exit  (+1 mov)
    const int block = static_cast<int>(tests.size()) + after_tests;
    for (std::size_t t = 0; t < tests.size(); ++t)
      p.push_back(insn(kJumpIfNotImm, tests[t].first, 0, static_cast<std::int16_t>(block - 1 - static_cast<int>(t)), tests[t].second));
    p.push_back(insn(kMoveReg, 7, 4, 0, 0));
    p.push_back(insn(kAndImm, 7, 0, 0, static_cast<std::int32_t>(~rule.access & 0xffff)));  // an access the rule lacks
    p.push_back(insn(kJumpIfNotImm, 7, 0, 2, 0));
    p.push_back(insn(kMoveImm, 0, 0, 0, 1));
    p.push_back(insn(kExit, 0, 0, 0, 0));
  }
  p.push_back(insn(kMoveImm, 0, 0, 0, 0));  // no rule allows it
  p.push_back(insn(kExit, 0, 0, 0, 0));
  return p;
}

void attach_device_filter(const std::string& cgroup_dir, const std::vector<DeviceRule>& rules) {
  const auto program = device_filter_program(rules);
  static const char kLicense[] = "Apache-2.0";
  std::string log(64 * 1024, '\0');
  bpf_attr load{};
  load.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
  load.expected_attach_type = BPF_CGROUP_DEVICE;
  load.insn_cnt = static_cast<std::uint32_t>(program.size());
  load.insns = reinterpret_cast<std::uint64_t>(program.data());
  load.license = reinterpret_cast<std::uint64_t>(kLicense);
  load.log_level = 1;
  load.log_size = static_cast<std::uint32_t>(log.size());
  load.log_buf = reinterpret_cast<std::uint64_t>(log.data());
  std::strncpy(load.prog_name, "ojs_devices", sizeof load.prog_name - 1);
  const int prog = static_cast<int>(bpf(BPF_PROG_LOAD, load));
  if (prog < 0) {
    const int error = errno;
    log.resize(std::strlen(log.c_str()));
    throw std::runtime_error("loading the device filter (bpf BPF_PROG_LOAD): " + std::string(std::strerror(error)) +
                             (log.empty() ? "" : "; verifier: " + log));
  }
  const int dir = ::open(cgroup_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) {
    const int error = errno;
    ::close(prog);
    throw std::runtime_error("opening cgroup " + cgroup_dir + ": " + std::strerror(error));
  }
  bpf_attr attach{};
  attach.target_fd = static_cast<std::uint32_t>(dir);
  attach.attach_bpf_fd = static_cast<std::uint32_t>(prog);
  attach.attach_type = BPF_CGROUP_DEVICE;
  attach.attach_flags = BPF_F_ALLOW_MULTI;
  const long attached = bpf(BPF_PROG_ATTACH, attach);
  const int error = errno;
  ::close(dir);
  ::close(prog);  // the attachment holds the program for as long as the cgroup lives
  if (attached != 0)
    throw std::runtime_error("attaching the device filter to " + cgroup_dir + " (bpf BPF_PROG_ATTACH): " + std::strerror(error));
}

}  // namespace ojs::worker
