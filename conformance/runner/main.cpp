// ojs-conformance: runs OJS conformance case files (the public format, both
// dialects) against any OJS server. See conformance/README.md.
#include "case_file.hpp"
#include "executor.hpp"
#include "report.hpp"

#include <CLI/CLI.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

namespace fs = std::filesystem;
using namespace ojs::conformance;

namespace {

// One discovered case file: loaded, or the reason it could not be.
struct Entry {
  std::optional<Case> kase;
  CaseReport load_error;
  const std::string& test_id() const { return kase ? kase->test_id : load_error.test_id; }
  const std::string& name() const { return kase ? kase->name : load_error.name; }
  const std::string& file() const { return kase ? kase->file : load_error.file; }
};

struct Discovery {
  std::vector<Entry> entries;
  std::size_t missing_paths = 0;
  std::size_t not_cases = 0;
};

Discovery discover(const std::vector<std::string>& paths) {
  Discovery d;
  for (const auto& path : paths) {
    if (!fs::exists(path)) {
      std::cout << "skipped: " << path << " not found\n";
      ++d.missing_paths;
      continue;
    }
    for (const auto& file : discover_json_files(path)) {
      Entry entry;
      try {
        std::ifstream in(file);
        const auto doc = nlohmann::json::parse(in);
        if (!looks_like_case(doc)) {
          std::cout << "note: " << file.string() << " is not a case file (no \"steps\"), skipped\n";
          ++d.not_cases;
          continue;
        }
        entry.kase = parse_case(doc, file.string());
      } catch (const std::exception& e) {
        entry.load_error = load_failure(file.string(), e.what());
      }
      d.entries.push_back(std::move(entry));
    }
  }
  return d;
}

bool selected(const Entry& e, const std::string& filter) {
  if (filter.empty()) return true;
  return e.test_id().find(filter) != std::string::npos || e.name().find(filter) != std::string::npos ||
         e.file().find(filter) != std::string::npos;
}

int list_cases(const std::vector<Entry>& entries, std::size_t skipped) {
  std::size_t invalid = 0;
  for (const auto& e : entries) {
    if (!e.kase) {
      ++invalid;
      std::cout << "INVALID " << e.file() << ": " << e.load_error.failure << '\n';
      continue;
    }
    std::string actions;
    for (const auto& s : e.kase->steps) actions += (actions.empty() ? "" : ", ") + s.action;
    std::cout << e.test_id() << "  " << e.name() << "  [" << e.kase->steps.size() << " steps: " << actions << "]  "
              << e.file() << '\n';
  }
  std::cout << entries.size() - invalid << " cases parsed, " << invalid << " invalid";
  if (skipped > 0) std::cout << ", " << skipped << " skipped";
  std::cout << '\n';
  return invalid == 0 ? 0 : 1;
}

void print_actions() {
  std::cout << "Dialect A actions: GET POST PUT PATCH DELETE HEAD OPTIONS (with path), WAIT, ASSERT\n"
               "Dialect B actions:\n";
  for (const auto& a : action_table()) std::cout << "  " << a.name << ": " << a.summary << '\n';
  std::cout << "  wait: sleep request.ms (or duration_ms)\n";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ojs-conformance: run OJS conformance cases against a server"};
  RunOptions options;
  std::string filter;
  std::string json_report;
  std::vector<std::string> paths;
  bool list = false;
  bool actions = false;
  app.add_option("--url", options.base_url, "Base URL of the OJS server")->capture_default_str();
  app.add_option("--token", options.token, "Bearer token sent as Authorization");
  app.add_option("--filter", filter, "Run only cases whose test_id, name or file contains this");
  app.add_flag("-v,--verbose", options.verbose, "Print every request, response and cleanup action");
  app.add_option("--json", json_report, "Write a JSON report to this file");
  app.add_option("--timeout-ms", options.timeout_ms, "Per-request timeout")->capture_default_str();
  app.add_flag("--list", list, "Parse and validate every case, print them, run nothing");
  app.add_flag("--actions", actions, "Print the supported actions and exit");
  app.add_option("paths", paths, "Case files or directories (searched recursively for *.json)");
  CLI11_PARSE(app, argc, argv);

  if (actions) {
    print_actions();
    return 0;
  }
  if (paths.empty()) {
    std::cerr << "no PATH given (case files or directories)\n" << app.help();
    return 2;
  }

  Discovery found = discover(paths);
  std::vector<Entry> entries;
  for (auto& e : found.entries) {
    if (selected(e, filter)) entries.push_back(std::move(e));
  }
  Summary summary;
  summary.skipped = found.missing_paths + found.not_cases;
  if (list) return list_cases(entries, summary.skipped);

  if (entries.empty()) {
    if (!found.entries.empty()) {
      std::cout << "no case matches --filter '" << filter << "'\n" << summary_line(summary) << '\n';
      return 1;
    }
    std::cout << (found.missing_paths == paths.size() ? "nothing to run: none of the given paths exist\n"
                                                      : "nothing to run: no case files found\n")
              << summary_line(summary) << '\n';
    return 0;
  }

  std::cout << "running " << entries.size() << " case(s) against " << options.base_url << '\n';
  std::vector<CaseReport> reports;
  for (const auto& e : entries) {
    reports.push_back(e.kase ? run_case(*e.kase, options, &std::cout) : e.load_error);
    const auto& r = reports.back();
    print_case_line(std::cout, r);
    std::cout.flush();
    (r.passed ? summary.passed : summary.failed)++;
  }
  if (!json_report.empty()) {
    try {
      write_json_report(json_report, reports, summary);
    } catch (const std::exception& e) {
      std::cerr << e.what() << '\n';
    }
  }
  std::cout << summary_line(summary) << '\n';
  return summary.failed == 0 ? 0 : 1;
}
