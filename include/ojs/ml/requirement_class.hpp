// Requirement classes: jobs whose hard constraints and class-level soft
// preferences are identical share one class, so a FETCH judges each live class
// once instead of each job. The class is identified by a hash of a canonical JSON
// form that the broker stores (in Redis) and rebuilds the class from.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <string>
#include <string_view>

#include "ojs/ml/requirements.hpp"

namespace ojs::ml {

// The class of jobs with no constraint and no preference at all.
inline constexpr std::string_view kDefaultClassId = "default";

// Canonical JSON of hard constraints + soft preferences: keys sorted, integral
// numbers as integers, gpu types lowercase, label maps sorted, affinity values
// sorted and de-duplicated, rule lists sorted; absent fields omitted.
// Scheduling attributes (priority, checkpoints, timeouts) are not part of it.
nlohmann::json class_json(const Requirements& req);

// First 16 hex chars of SHA-256 of class_json(req).dump(), or "default".
std::string class_id(const Requirements& req);

struct RequirementClass {
  std::string id;
  std::string canonical;  // class_json(req).dump()
};
RequirementClass requirement_class(const Requirements& req);

// Rebuilds hard + soft from class_json output (scheduling attributes stay default).
// class_id(requirements_from_class_json(class_json(r))) == class_id(r).
// Throws ojs::invalid_field on malformed input.
Requirements requirements_from_class_json(const nlohmann::json& canonical);

}  // namespace ojs::ml
