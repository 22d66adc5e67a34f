// Console table and JSON report.
#pragma once
#include "executor.hpp"

#include <iosfwd>
#include <string>
#include <vector>

namespace ojs::conformance {

struct Summary {
  std::size_t passed = 0;
  std::size_t failed = 0;
  std::size_t skipped = 0;  // missing paths and JSON files that are not cases
};

// One line: "PASS  L0-ENV-001    valid-minimal-job   (3 ms)" or, for a failure,
// "FAIL  <id>  <name>  <step>: <assertion: expected X, got Y>".
void print_case_line(std::ostream& out, const CaseReport& report);

// "N passed, N failed" (+ ", N skipped" when any), alone on its line.
std::string summary_line(const Summary& summary);

void write_json_report(const std::string& path, const std::vector<CaseReport>& reports, const Summary& summary);

}  // namespace ojs::conformance
