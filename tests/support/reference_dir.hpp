// Where the public OJS conformance cases are: $OJS_REFERENCE_DIR, else ../shared
// next to the checkout (main) or to its parent (worktrees).
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

}  // namespace ojs::test
