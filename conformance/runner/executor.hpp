// Running one case against a live OJS server.
//
// Steps run in file order. A step with `parallel_with` runs concurrently with
// the named step(s) (each on its own connection, released together); their
// checks are then evaluated in file order. The first failing step stops the
// case. Afterwards every job the case created (ids from 2xx responses to
// POST /ojs/v1/jobs and /ojs/v1/jobs/batch) that is not terminal
// (completed, cancelled, discarded) is cancelled with DELETE /ojs/v1/jobs/{id},
// so no case leaks jobs into a queue that a later case fetches from.
#pragma once
#include "case_file.hpp"

#include <iosfwd>
#include <string>
#include <vector>

namespace ojs::conformance {

struct RunOptions {
  std::string base_url = "http://127.0.0.1:8080";
  std::string token;
  long timeout_ms = 30000;
  bool verbose = false;
};

struct StepReport {
  std::string id;
  std::string action;
  std::string call;    // "POST /ojs/v1/jobs", "" for WAIT/ASSERT
  long status = 0;
  double ms = 0;
  bool ok = true;
  std::string failure;
};

struct CaseReport {
  std::string file;
  std::string test_id;
  std::string name;
  bool passed = false;
  std::string failed_step;  // id of the first failing step ("" when the case did not load)
  std::string failure;      // what failed: the assertion, expected vs actual
  double ms = 0;
  std::vector<StepReport> steps;
  std::vector<std::string> cleanup;  // what isolation did: "cancelled <id> (was available)"
};

// `log` receives per-step detail when options.verbose is set (may be null).
CaseReport run_case(const Case& kase, const RunOptions& options, std::ostream* log);

// A report for a file that could not be loaded as a case.
CaseReport load_failure(const std::string& file, const std::string& error);

}  // namespace ojs::conformance
