#include "worker/execution/checkpoint_retention.hpp"

#include <algorithm>
#include <filesystem>
#include <string_view>
#include <system_error>

namespace ojs::worker {

std::vector<std::string> prune_file_checkpoints(const std::string& checkpoint_uri, int max_count) {
  constexpr std::string_view kScheme = "file://";
  std::vector<std::string> removed;
  if (max_count < 1 || checkpoint_uri.rfind(kScheme, 0) != 0) return removed;
  const std::filesystem::path dir = checkpoint_uri.substr(kScheme.size());
  if (!dir.is_absolute()) return removed;
  std::error_code ec;
  struct Entry {
    std::filesystem::path path;
    std::filesystem::file_time_type written;
  };
  std::vector<Entry> entries;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const auto name = it->path().filename().string();
    if (name.empty() || name.front() == '.') continue;
    std::error_code time_ec;
    const auto written = it->last_write_time(time_ec);
    if (!time_ec) entries.push_back({it->path(), written});
  }
  if (static_cast<int>(entries.size()) <= max_count) return removed;
  // Newest first; equal times fall back to the name.
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.written != b.written ? a.written > b.written : a.path.filename() > b.path.filename();
  });
  for (std::size_t i = static_cast<std::size_t>(max_count); i < entries.size(); ++i) {
    std::error_code remove_ec;
    if (std::filesystem::remove_all(entries[i].path, remove_ec) > 0 && !remove_ec) removed.push_back(entries[i].path.string());
  }
  return removed;
}

}  // namespace ojs::worker
