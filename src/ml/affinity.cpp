#include "ojs/ml/affinity.hpp"

#include <algorithm>

#include "json_fields.hpp"

namespace ojs::ml {
namespace {

std::optional<double> to_number(const std::string& s) {
  double v = 0;
  return parse_double(s, v) ? std::optional<double>(v) : std::nullopt;
}

// A rule's values as its text shows them: "[a, b]".
std::string bracketed(const std::vector<std::string>& values) { return "[" + join_texts(values) + "]"; }

bool compare(AffinityOp op, double have, double want) {
  switch (op) {
    case AffinityOp::Gt: return have > want;
    case AffinityOp::Gte: return have >= want;
    case AffinityOp::Lt: return have < want;
    case AffinityOp::Lte: return have <= want;
    default: return false;
  }
}

}  // namespace

std::string describe(const AffinityRule& rule) {
  std::string out = rule.key + " " + std::string(to_string(rule.op));
  if (!rule.values.empty()) out += " " + (rule.values.size() == 1 && rule.op >= AffinityOp::Gt ? rule.values[0] : bracketed(rule.values));
  return out;
}

std::optional<std::string> rule_mismatch(const AffinityRule& rule, const Labels& labels) {
  auto it = labels.find(rule.key);
  const bool present = it != labels.end();
  const auto label = [&] { return "label " + rule.key + "=" + it->second; };
  const auto listed = [&] { return std::find(rule.values.begin(), rule.values.end(), it->second) != rule.values.end(); };
  switch (rule.op) {
    case AffinityOp::Exists:
      if (present) return std::nullopt;
      return "lacks label " + rule.key;
    case AffinityOp::DoesNotExist:
      if (!present) return std::nullopt;
      return "has " + label() + ", must not exist";
    case AffinityOp::In:
      if (!present) return "lacks label " + rule.key + " (needs one of " + bracketed(rule.values) + ")";
      if (listed()) return std::nullopt;
      return label() + " not in " + bracketed(rule.values);
    case AffinityOp::NotIn:  // Kubernetes: an absent label satisfies NotIn
      if (!present || !listed()) return std::nullopt;
      return label() + " is in excluded " + bracketed(rule.values);
    case AffinityOp::Gt:
    case AffinityOp::Gte:
    case AffinityOp::Lt:
    case AffinityOp::Lte: {
      if (!present) return "lacks label " + rule.key + " (needs " + describe(rule) + ")";
      auto have = to_number(it->second);
      if (!have) return label() + " is not numeric (needs " + describe(rule) + ")";
      auto want = rule.values.empty() ? std::nullopt : to_number(rule.values[0]);
      if (want && compare(rule.op, *have, *want)) return std::nullopt;
      return label() + ", needs " + describe(rule);
    }
  }
  return "unknown operator";
}

}  // namespace ojs::ml
