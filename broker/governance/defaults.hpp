// ml_defaults at PUSH: a queue's default ext_ml_* attributes are written into the
// job document (so INFO shows them) where the producer gave none. A default never
// overrides the producer: it is skipped when the attribute is present at top
// level, and when the producer used the SDK meta encoding of the same group
// (meta.resources, meta.model, meta.affinity, meta.node_selector, meta.checkpoint,
// meta.preemption, meta.compute: every group the alias table gives the attribute),
// since that encoding may already say it.
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace ojs::broker::governance {

// The SDK meta groups an ext_ml_* attribute may be sent under ("resources", "model",
// both "checkpoint" and "preemption" for checkpoint_on_preempt), from the one alias
// table (ojs/ml/meta_aliases.hpp); empty when the attribute has no meta encoding.
std::vector<std::string> meta_groups_of(const std::string& attribute);

// Fills unset attributes; returns the names it filled.
std::vector<std::string> apply_defaults(nlohmann::json& document, const nlohmann::json& ml_defaults);

}  // namespace ojs::broker::governance
