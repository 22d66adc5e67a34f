// Simulated workers and ML jobs for integration tests: the example capability
// files (examples/workers/<name>.json) and an OJS job on a queue with ext_ml_* attributes.
#pragma once
#include <nlohmann/json.hpp>

#include <chrono>
#include <ctime>
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

// An RFC 3339 time (whole seconds, UTC) at least `from_now` ahead: a scheduled_at.
inline std::string iso_in(std::chrono::milliseconds from_now) {
  const auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now() + from_now + std::chrono::seconds(1));
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

inline void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

}  // namespace ojs::test
