// Simulated workers and ML jobs for integration tests: the example capability
// files (examples/workers/<name>.json) and an OJS job on a queue with ext_ml_* attributes.
#pragma once
#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

namespace ojs::test {

inline nlohmann::json example_worker(const std::string& name) {
  std::ifstream in(std::string(OJS_SOURCE_DIR) + "/examples/workers/" + name + ".json");
  return nlohmann::json::parse(in);
}

inline nlohmann::json ml_job(const std::string& queue, const nlohmann::json& attrs) {
  nlohmann::json j = {{"type", "ml.task"}, {"args", nlohmann::json::array()}, {"options", {{"queue", queue}}}};
  for (auto it = attrs.begin(); it != attrs.end(); ++it) j[it.key()] = it.value();
  return j;
}

// A plain OJS job (no ext_ml_*) on a queue, with an optional retry policy.
inline nlohmann::json job_in(const std::string& queue, nlohmann::json retry = nlohmann::json::object()) {
  nlohmann::json j = {{"type", "t"}, {"args", nlohmann::json::array()}, {"options", {{"queue", queue}}}};
  if (!retry.empty()) j["options"]["retry"] = retry;
  return j;
}

inline void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

}  // namespace ojs::test
