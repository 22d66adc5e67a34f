#include "report.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <iomanip>
#include <ostream>
#include <stdexcept>

namespace ojs::conformance {

using nlohmann::json;

void print_case_line(std::ostream& out, const CaseReport& report) {
  out << (report.passed ? "PASS  " : "FAIL  ") << std::left << std::setw(14) << report.test_id << ' '
      << std::setw(44) << report.name;
  if (report.passed) {
    out << " (" << static_cast<long>(report.ms) << " ms)";
  } else {
    out << ' ' << (report.failed_step.empty() ? "" : report.failed_step + ": ") << report.failure;
  }
  out << std::right << '\n';
}

std::string summary_line(const Summary& summary) {
  std::string line = std::to_string(summary.passed) + " passed, " + std::to_string(summary.failed) + " failed";
  if (summary.skipped > 0) line += ", " + std::to_string(summary.skipped) + " skipped";
  return line;
}

void write_json_report(const std::string& path, const std::vector<CaseReport>& reports, const Summary& summary) {
  json cases = json::array();
  for (const auto& r : reports) {
    json steps = json::array();
    for (const auto& s : r.steps) {
      steps.push_back({{"id", s.id}, {"action", s.action}, {"call", s.call}, {"status", s.status},
                       {"ms", s.ms}, {"ok", s.ok}, {"failure", s.failure}});
    }
    cases.push_back({{"file", r.file}, {"test_id", r.test_id}, {"name", r.name},
                     {"result", r.passed ? "pass" : "fail"}, {"failed_step", r.failed_step},
                     {"failure", r.failure}, {"ms", r.ms}, {"steps", steps}, {"cleanup", r.cleanup}});
  }
  const json doc = {{"summary", {{"passed", summary.passed}, {"failed", summary.failed}, {"skipped", summary.skipped}}},
                    {"cases", cases}};
  std::ofstream file(path);
  if (!file) throw std::runtime_error("cannot write " + path);
  file << doc.dump(2) << '\n';
}

}  // namespace ojs::conformance
