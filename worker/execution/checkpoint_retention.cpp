#include "worker/execution/checkpoint_retention.hpp"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string_view>
#include <system_error>

#include "ojs/ml/storage_uri.hpp"

namespace ojs::worker {

namespace {
constexpr std::string_view kFileScheme = "file://";
}  // namespace

std::vector<std::string> prune_file_checkpoints(const std::string& checkpoint_uri, int max_count) {
  constexpr std::string_view kScheme = kFileScheme;
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

StoredCheckpoints::StoredCheckpoints(std::string checkpoint_uri, int max_count, const nlohmann::json& kept_by_broker)
    : max_count_(max_count) {
  if (checkpoint_uri.empty() || checkpoint_uri.rfind(kFileScheme, 0) == 0) return;  // file://: pruned by listing it
  checkpoint_uri_ = ml::normalise_storage_uri(checkpoint_uri).value_or("");
  if (!kept_by_broker.is_array()) return;
  for (const auto& checkpoint : kept_by_broker) record(checkpoint);
}

std::vector<std::string> StoredCheckpoints::record(const nlohmann::json& metadata) {
  if (checkpoint_uri_.empty() || max_count_ < 1 || !metadata.is_object()) return {};
  const auto key = metadata.find("storage_key");
  if (key == metadata.end() || !key->is_string()) return {};
  const auto& text = key->get_ref<const std::string&>();
  const std::string candidate = ml::is_safe_relative_key(text) ? checkpoint_uri_ + text : text;
  const auto uri = ml::normalise_storage_uri(candidate);
  // Inside the prefix, never the prefix itself (the whole of the job's checkpoints).
  if (!uri || uri->size() <= checkpoint_uri_.size() || !ml::storage_uri_allowed(*uri, {checkpoint_uri_})) return {};
  if (std::find(keys_.begin(), keys_.end(), *uri) != keys_.end()) return {};  // the same checkpoint, committed again
  keys_.push_back(*uri);
  if (static_cast<int>(keys_.size()) <= max_count_) return {};
  const auto beyond = keys_.end() - max_count_;
  std::vector<std::string> out(keys_.begin(), beyond);
  keys_.erase(keys_.begin(), beyond);
  return out;
}

}  // namespace ojs::worker
