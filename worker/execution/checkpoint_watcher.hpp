// Notices when a job (re)writes its checkpoint metadata file so the agent can
// commit it to the broker. Jobs should write a temporary file and rename it;
// a half-written file is not valid JSON and is simply picked up next time.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>

namespace ojs::worker {

class CheckpointWatcher {
 public:
  explicit CheckpointWatcher(std::filesystem::path path) : path_(std::move(path)) {}

  // The metadata when the file changed since the last accepted read and holds a
  // JSON object ({epoch, step, loss, metrics, storage_key}); otherwise nullopt.
  std::optional<nlohmann::json> take_if_changed();

 private:
  std::filesystem::path path_;
  std::int64_t seen_mtime_ns_ = -1;
  std::uintmax_t seen_size_ = 0;
};

}  // namespace ojs::worker
