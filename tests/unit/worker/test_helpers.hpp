// Shared helpers for the worker unit tests: fixture paths and scratch directories.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <string>

namespace ojs::worker::testing {

inline std::filesystem::path fixture_path(const std::string& relative) {
  return std::filesystem::path(OJS_SOURCE_DIR) / "tests" / "fixtures" / relative;
}

// A fresh directory under the system temp dir, removed when the test ends.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& name)
      : path_(std::filesystem::temp_directory_path() / ("ojs-worker-test-" + name + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace ojs::worker::testing
