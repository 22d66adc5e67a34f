#include "ojs/ml/types.hpp"

#include <array>
#include <charconv>
#include <cmath>

namespace ojs::ml {
namespace {

// One table per enum keeps to_string and parse_* in step.
template <typename E, std::size_t N>
std::optional<E> lookup(const std::array<std::pair<E, std::string_view>, N>& table, std::string_view s) {
  for (const auto& [e, name] : table)
    if (name == s) return e;
  return std::nullopt;
}
template <typename E, std::size_t N>
std::string_view name_of(const std::array<std::pair<E, std::string_view>, N>& table, E e) {
  for (const auto& [v, name] : table)
    if (v == e) return name;
  return "?";
}

constexpr std::array<std::pair<Accelerator, std::string_view>, 4> kAccelerators{{
    {Accelerator::gpu, "gpu"}, {Accelerator::tpu, "tpu"}, {Accelerator::fpga, "fpga"}, {Accelerator::cpu, "cpu"}}};
constexpr std::array<std::pair<Interconnect, std::string_view>, 3> kInterconnects{{
    {Interconnect::any, "any"}, {Interconnect::nvlink, "nvlink"}, {Interconnect::pcie, "pcie"}}};
constexpr std::array<std::pair<PriorityClass, std::string_view>, 3> kPriorities{{
    {PriorityClass::spot, "spot"}, {PriorityClass::on_demand, "on-demand"}, {PriorityClass::reserved, "reserved"}}};
constexpr std::array<std::pair<AffinityOp, std::string_view>, 8> kOps{{{AffinityOp::In, "In"},
                                                                     {AffinityOp::NotIn, "NotIn"},
                                                                     {AffinityOp::Exists, "Exists"},
                                                                     {AffinityOp::DoesNotExist, "DoesNotExist"},
                                                                     {AffinityOp::Gt, "Gt"},
                                                                     {AffinityOp::Gte, "Gte"},
                                                                     {AffinityOp::Lt, "Lt"},
                                                                     {AffinityOp::Lte, "Lte"}}};

bool parse_int(std::string_view s, int& out) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && p == s.data() + s.size();
}

}  // namespace

std::string_view to_string(Accelerator a) { return name_of(kAccelerators, a); }
std::string_view to_string(Interconnect i) { return name_of(kInterconnects, i); }
std::string_view to_string(PriorityClass p) { return name_of(kPriorities, p); }
std::string_view to_string(AffinityOp op) { return name_of(kOps, op); }
std::optional<Accelerator> parse_accelerator(std::string_view s) { return lookup(kAccelerators, s); }
std::optional<Interconnect> parse_interconnect(std::string_view s) { return lookup(kInterconnects, s); }
std::optional<PriorityClass> parse_priority_class(std::string_view s) { return lookup(kPriorities, s); }
std::optional<AffinityOp> parse_affinity_op(std::string_view s) { return lookup(kOps, s); }

std::string ComputeCapability::str() const { return std::to_string(major) + "." + std::to_string(minor); }

std::optional<ComputeCapability> parse_compute_capability(std::string_view text) {
  auto dot = text.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  ComputeCapability cc;
  if (!parse_int(text.substr(0, dot), cc.major) || !parse_int(text.substr(dot + 1), cc.minor)) return std::nullopt;
  return cc;
}

std::string lowercase(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

bool gpu_type_matches(std::string_view wanted, std::string_view have) {
  if (wanted.empty()) return true;
  std::string w = lowercase(wanted), h = lowercase(have);
  if (w == h) return true;
  // Bare model name: "a100" matches "nvidia-a100".
  if (w.find('-') == std::string::npos) {
    auto dash = h.find('-');
    return dash != std::string::npos && h.compare(dash + 1, std::string::npos, w) == 0;
  }
  return false;
}

std::string join_texts(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : std::string(sep)) + p;
  return out;
}

std::string format_number(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
  // printf's "%g", as std::to_chars writes it (snprintf cost ~1.6k instructions;
  // a FETCH formats one per eligible class for its score's explanation)
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 6);
  return std::string(buf, r.ptr);
}

}  // namespace ojs::ml
