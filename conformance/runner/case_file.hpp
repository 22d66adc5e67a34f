// Loading conformance case files (both dialects) into a validated Case.
#pragma once
#include "actions.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace ojs::conformance {

enum class StepKind { Http, Wait, Assert };

struct Step {
  std::string id;            // as written, or "step-N" (1-based) when absent (dialect B)
  std::string action;        // as written
  StepKind kind = StepKind::Http;
  const ActionDef* def = nullptr;  // dialect B table action; nullptr for dialect A HTTP steps
  nlohmann::json spec;       // the step object as written
  std::string parallel_with; // id of a step to run concurrently with this one
  int delay_ms = 0;          // sleep before the step
  int wait_ms = 0;           // StepKind::Wait: how long
  nlohmann::json expect;     // "assertions" (dialect A) or "expect" (dialect B), or null
};

struct Case {
  std::string file;
  std::string test_id;
  std::string name;
  std::string description;
  std::vector<Step> steps;
};

// Throws std::invalid_argument with a readable reason when `doc` is not a valid
// case (unknown action, malformed matcher, missing path, ...).
Case parse_case(const nlohmann::json& doc, const std::string& file);

// A JSON document is a case file when it is an object with a "steps" array.
bool looks_like_case(const nlohmann::json& doc);

// Every *.json under `root` (recursively, sorted), or `root` itself if a file.
std::vector<std::filesystem::path> discover_json_files(const std::filesystem::path& root);

}  // namespace ojs::conformance
