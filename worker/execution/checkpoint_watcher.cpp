#include "worker/execution/checkpoint_watcher.hpp"

#include "worker/config/json_file.hpp"

#include <chrono>

namespace ojs::worker {

std::optional<nlohmann::json> CheckpointWatcher::take_if_changed() {
  std::error_code ec;
  const auto mtime = std::filesystem::last_write_time(path_, ec);
  if (ec) return std::nullopt;
  const auto size = std::filesystem::file_size(path_, ec);
  if (ec) return std::nullopt;
  const auto mtime_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(mtime.time_since_epoch()).count();
  if (mtime_ns == seen_mtime_ns_ && size == seen_size_) return std::nullopt;
  nlohmann::json metadata;
  try {
    metadata = nlohmann::json::parse(read_text_file(path_.string()));
  } catch (const std::exception&) {
    return std::nullopt;  // partially written: try again on the next poll
  }
  if (!metadata.is_object()) return std::nullopt;
  seen_mtime_ns_ = mtime_ns;
  seen_size_ = size;
  return metadata;
}

}  // namespace ojs::worker
