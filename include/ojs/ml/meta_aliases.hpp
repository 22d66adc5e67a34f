// The SDK encoding of the ext_ml_* attributes (meta.<group>.<name>), one table for
// everyone who reads it: the broker's requirements and ml_defaults, the
// anti-affinity labels of running jobs, and the worker's view of a job.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <array>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ojs::ml {

struct MetaAlias {
  std::array<std::string_view, 3> path;  // under meta; unused tail entries empty
  std::string_view attribute;            // the ext_ml_ name without the prefix
};

// Every alias. Where two aliases name one attribute the later one wins when a
// producer sends both (meta.model.id over meta.model.name, checkpoint.max_count
// over checkpoint.max_checkpoints, preemption.checkpoint_on_preempt over
// checkpoint.on_preempt).
std::span<const MetaAlias> meta_aliases();

// The value the producer sent for `attribute` (no ext_ml_ prefix) in the meta
// encoding, following the precedence above, or nullptr; `path` receives where it
// was found ("meta.model.name"). The SDK count shorthand meta.resources.gpu = n is
// gpu_count. A non-object on the way reads as absent (requirements.cpp validates).
const nlohmann::json* meta_value(const nlohmann::json& job, std::string_view attribute, std::string* path = nullptr);

// The attribute as a job carries it: top-level ext_ml_<attribute> wins, else the
// meta encoding; a null value is absent.
const nlohmann::json* ml_attribute(const nlohmann::json& job, std::string_view attribute);

// The meta groups (first path element: "resources", "model", ...) an attribute may
// be sent under; empty when it has no meta encoding.
std::vector<std::string_view> meta_groups_of(std::string_view attribute);

}  // namespace ojs::ml
