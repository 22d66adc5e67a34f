// Where the public OJS conformance cases are: $OJS_REFERENCE_DIR, else ../shared
// next to the checkout (main) or to its parent (worktrees). Shared by the
// integration, cluster and conformance runner tests.
#pragma once
#include <cstdlib>
#include <filesystem>
#include <string>

namespace ojs::test {

inline std::string conformance_reference_dir() {
  if (const char* env = std::getenv("OJS_REFERENCE_DIR")) return std::string(env) + "/conformance";
  for (const char* up : {"/../shared", "/../../shared"}) {
    const auto dir = std::string(OJS_SOURCE_DIR) + up + "/ojs-reference/conformance";
    if (std::filesystem::is_directory(dir)) return dir;
  }
  return std::string(OJS_SOURCE_DIR) + "/../shared/ojs-reference/conformance";
}

// Why the public cases cannot run here, "" when they can: no reference checkout
// beside this one and none named by $OJS_REFERENCE_DIR (a named one that is
// missing is no reason: the tests fail on it). A test skips with this text.
inline std::string conformance_cases_absent() {
  if (std::getenv("OJS_REFERENCE_DIR") || std::filesystem::is_directory(conformance_reference_dir())) return "";
  return "the public OJS conformance cases are not here (" + conformance_reference_dir() +
         "): check out the OJS reference beside this checkout as ../shared/ojs-reference, or set OJS_REFERENCE_DIR";
}

}  // namespace ojs::test
