// Vocabulary shared by every part of the matcher: accelerator kinds, interconnects,
// priority classes, compute capabilities and affinity rules. Kept free of JSON so
// that the broker's hot path can include it cheaply.
#pragma once
#include <compare>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ojs::ml {

// Worker and selector labels: a sorted map, so iteration order is canonical.
using Labels = std::map<std::string, std::string>;

enum class Accelerator { gpu, tpu, fpga, cpu };
enum class Interconnect { any, nvlink, pcie };
// Declared in preemption order: spot < on_demand < reserved.
enum class PriorityClass { spot, on_demand, reserved };
enum class AffinityOp { In, NotIn, Exists, DoesNotExist, Gt, Gte, Lt, Lte };

std::string_view to_string(Accelerator a);
std::string_view to_string(Interconnect i);
std::string_view to_string(PriorityClass p);
std::string_view to_string(AffinityOp op);
std::optional<Accelerator> parse_accelerator(std::string_view s);
std::optional<Interconnect> parse_interconnect(std::string_view s);
std::optional<PriorityClass> parse_priority_class(std::string_view s);
std::optional<AffinityOp> parse_affinity_op(std::string_view s);

// NVIDIA compute capability "major.minor". Compared part by part as integers, so
// "10.0" > "9.0" and "8.10" > "8.6"; a float would get both wrong.
struct ComputeCapability {
  int major = 0;
  int minor = 0;
  auto operator<=>(const ComputeCapability&) const = default;
  std::string str() const;
};
// nullopt unless the text is exactly digits '.' digits.
std::optional<ComputeCapability> parse_compute_capability(std::string_view text);

// One affinity / anti-affinity expression, Kubernetes style.
struct AffinityRule {
  std::string key;
  AffinityOp op = AffinityOp::Exists;
  std::vector<std::string> values;
  int weight = 50;  // meaningful for preferred rules only
  bool operator==(const AffinityRule&) const = default;
};

// GPU model names compare case-insensitively, and a bare model ("a100", as the
// public conformance cases send) matches any vendor's "<vendor>-a100".
bool gpu_type_matches(std::string_view wanted, std::string_view have);
std::string lowercase(std::string_view s);

// Integral values print without a fraction ("80", not "80.000000").
std::string format_number(double v);

// Texts joined with a separator, for refusal messages ("a, b").
std::string join_texts(const std::vector<std::string>& parts, std::string_view sep = ", ");

}  // namespace ojs::ml
