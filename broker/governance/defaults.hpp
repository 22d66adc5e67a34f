// ml_defaults at PUSH: a queue's default ext_ml_* attributes are written into the
// job document (so INFO shows them) where the producer gave none. A default never
// overrides the producer: it is skipped when the attribute is present at top
// level, and when the producer used the SDK meta encoding of the same group
// (meta.resources, meta.model, meta.affinity, meta.node_selector, meta.checkpoint,
// meta.preemption, meta.compute), since that encoding may already say it.
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace ojs::broker::governance {

// The SDK meta group an ext_ml_* attribute belongs to ("resources", "model", ...).
std::string meta_group_of(const std::string& attribute);

// Fills unset attributes; returns the names it filled.
std::vector<std::string> apply_defaults(nlohmann::json& document, const nlohmann::json& ml_defaults);

}  // namespace ojs::broker::governance
