// Headless Chromium for the browser tests (the status page, CORS from another
// origin). scripts/install-deps.sh installs the Debian `chromium` package.
#pragma once
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace ojs::test {

// The first Chromium binary on PATH, or "" when there is none.
inline std::string find_chromium() {
  namespace fs = std::filesystem;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  for (const char* name : {"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}) {
    std::size_t start = 0;
    while (start <= dirs.size()) {
      const auto end = std::min(dirs.find(':', start), dirs.size());
      const fs::path candidate = fs::path(dirs.substr(start, end - start)) / name;
      if (!candidate.parent_path().empty() && fs::exists(candidate)) return candidate.string();
      start = end + 1;
    }
  }
  return {};
}

// A headless run with its own profile directory, nothing fetched but what the page asks.
inline std::vector<std::string> chromium_args(const std::string& chromium, const std::string& profile) {
  return {chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
          "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
          "--hide-scrollbars", "--user-data-dir=" + profile};
}

}  // namespace ojs::test
