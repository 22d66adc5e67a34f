// Evaluation of one affinity expression against a label set. Used by the
// required_affinity and anti_affinity predicates and by preferred-affinity scoring.
#pragma once
#include <optional>
#include <string>

#include "ojs/ml/types.hpp"

namespace ojs::ml {

// nullopt when the labels satisfy the rule; otherwise why not, e.g.
// "label zone=us-west-1a not in [us-east-1a]" or "label gpus=abc is not numeric".
std::optional<std::string> rule_mismatch(const AffinityRule& rule, const Labels& labels);

inline bool rule_matches(const AffinityRule& rule, const Labels& labels) {
  return !rule_mismatch(rule, labels).has_value();
}

// "zone In [a, b]" — for messages.
std::string describe(const AffinityRule& rule);

}  // namespace ojs::ml
