#include "case_file.hpp"

#include "matchers.hpp"
#include "text.hpp"

#include <algorithm>
#include <cctype>
#include <set>
#include <stdexcept>

namespace ojs::conformance {

using nlohmann::json;

namespace {

int non_negative_ms(const json& value, const char* what) {
  if (!value.is_number() || value.get<double>() < 0) throw std::invalid_argument(std::string(what) + " must be >= 0");
  return value.get<int>();
}

// WAIT {duration_ms} (dialect A) or wait {request: {ms | duration_ms}} (dialect B).
int wait_duration(const json& step) {
  const json request = step.value("request", json::object());
  for (const json* source : {&step, &request}) {
    for (const char* key : {"duration_ms", "ms"}) {
      if (source->is_object() && source->contains(key)) return non_negative_ms(source->at(key), key);
    }
  }
  throw std::invalid_argument("wait needs duration_ms or ms");
}

void validate_expectations(const json& expect) {
  if (expect.is_null()) return;
  if (!expect.is_object()) throw std::invalid_argument("assertions/expect must be an object");
  if (expect.contains("status")) check_status(expect.at("status"), 200);  // compiles the matcher
  if (expect.contains("headers")) check_headers(expect.at("headers"), {});
  if (expect.contains("body")) validate_body_pattern(expect.at("body"));
}

void validate_store(const json& step) {
  for (const char* key : {"store", "captures", "capture"}) {
    if (!step.contains(key)) continue;
    if (!step.at(key).is_object()) throw std::invalid_argument(std::string(key) + " must be an object");
    for (const auto& [name, path] : step.at(key).items()) {
      if (!path.is_string()) throw std::invalid_argument(std::string(key) + "." + name + " must be a path string");
    }
  }
}

Step parse_step(const json& spec, std::size_t index) {
  if (!spec.is_object()) throw std::invalid_argument("not an object");
  if (!spec.contains("action") || !spec.at("action").is_string()) throw std::invalid_argument("needs an \"action\" string");
  Step step;
  step.spec = spec;
  step.action = spec.at("action").get<std::string>();
  step.id = spec.contains("id") ? spec.at("id").get<std::string>() : "step-" + std::to_string(index + 1);
  step.parallel_with = spec.value("parallel_with", std::string());
  if (spec.contains("delay_ms")) step.delay_ms = non_negative_ms(spec.at("delay_ms"), "delay_ms");
  step.expect = spec.contains("assertions") ? spec.at("assertions") : spec.value("expect", json());
  // The extension cases' `status_in` / `status_one_of: [..]` are `status: {"$in": [..]}`.
  for (const char* key : {"status_in", "status_one_of"}) {
    if (!step.expect.is_object() || !step.expect.contains(key)) continue;
    if (step.expect.contains("status")) throw std::invalid_argument(std::string(key) + " and status both given");
    step.expect["status"] = {{"$in", step.expect.at(key)}};
    step.expect.erase(key);
  }

  const std::string action = lower(step.action);
  if (action == "wait") {
    step.kind = StepKind::Wait;
    step.wait_ms = wait_duration(spec);
    return step;
  }
  if (action == "assert") {
    step.kind = StepKind::Assert;
    if (!step.expect.is_object() || !(step.expect.contains("equality") || step.expect.contains("exclusive_claim"))) {
      throw std::invalid_argument("ASSERT needs assertions.equality and/or assertions.exclusive_claim");
    }
    return step;
  }
  if (is_http_method(step.action)) {
    build_http_step(spec);  // validates path/body/headers
  } else {
    step.def = find_action(step.action);
    if (!step.def) throw std::invalid_argument("unknown action '" + step.action + "'");
    step.def->build(spec.value("request", json()));  // validates the request's shape
  }
  validate_expectations(step.expect);
  validate_store(spec);
  return step;
}

}  // namespace

bool looks_like_case(const json& doc) { return doc.is_object() && doc.contains("steps") && doc.at("steps").is_array(); }

Case parse_case(const json& doc, const std::string& file) {
  if (!looks_like_case(doc)) throw std::invalid_argument("not a case file (no \"steps\" array)");
  Case result;
  result.file = file;
  const auto text = [&doc](const char* key) {
    return doc.contains(key) && doc.at(key).is_string() ? doc.at(key).get<std::string>() : std::string();
  };
  result.name = text("name");
  result.description = text("description");
  result.test_id = text("test_id");
  if (result.test_id.empty()) result.test_id = std::filesystem::path(file).stem().string();
  if (result.name.empty()) result.name = std::filesystem::path(file).stem().string();
  if (doc.at("steps").empty()) throw std::invalid_argument("\"steps\" is empty");

  std::set<std::string> ids;
  for (std::size_t i = 0; i < doc.at("steps").size(); ++i) {
    try {
      Step step = parse_step(doc.at("steps")[i], i);
      if (!ids.insert(step.id).second) throw std::invalid_argument("duplicate step id '" + step.id + "'");
      result.steps.push_back(std::move(step));
    } catch (const std::exception& e) {
      throw std::invalid_argument("step " + std::to_string(i + 1) + ": " + e.what());
    }
  }
  for (const auto& step : result.steps) {
    if (!step.parallel_with.empty() && !ids.contains(step.parallel_with)) {
      throw std::invalid_argument("step " + step.id + ": parallel_with names unknown step '" + step.parallel_with + "'");
    }
  }
  return result;
}

std::vector<std::filesystem::path> discover_json_files(const std::filesystem::path& root) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  if (fs::is_regular_file(root)) return {root};
  for (const auto& entry : fs::recursive_directory_iterator(root, fs::directory_options::follow_directory_symlink)) {
    if (entry.is_regular_file() && entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace ojs::conformance
