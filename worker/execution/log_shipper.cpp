#include "worker/execution/log_shipper.hpp"

#include <fstream>
#include <system_error>

namespace ojs::worker {

namespace {

constexpr const char* kStreams[2] = {"stdout", "stderr"};

// How many bytes at the end of `s` are the start of a UTF-8 character not yet complete.
std::size_t incomplete_tail(const std::string& s) {
  for (std::size_t back = 1; back <= 3 && back <= s.size(); ++back) {
    const auto c = static_cast<unsigned char>(s[s.size() - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    const std::size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return need > back ? back : 0;
  }
  return 0;
}

std::string as_text(const std::string& bytes) {
  return nlohmann::json::parse(nlohmann::json(bytes).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
      .get<std::string>();
}

}  // namespace

nlohmann::json LogShipper::take(bool final) {
  nlohmann::json chunks = nlohmann::json::array();
  std::uint64_t skipped = 0;
  for (int s = 0; s < 2; ++s) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(files_[s], ec);
    if (ec || size <= offsets_[s]) continue;
    if (size - offsets_[s] > settings_.max_bytes) {  // a flood: keep only its most recent bytes
      skipped += size - settings_.max_bytes - offsets_[s];
      offsets_[s] = size - settings_.max_bytes;
    }
    const std::uint64_t want = std::min<std::uint64_t>(size - offsets_[s], settings_.max_take);
    std::ifstream in(files_[s], std::ios::binary);
    in.seekg(static_cast<std::streamoff>(offsets_[s]));
    std::string data(want, '\0');
    in.read(data.data(), static_cast<std::streamsize>(want));
    data.resize(static_cast<std::size_t>(in.gcount()));
    if (!final) data.resize(data.size() - incomplete_tail(data));
    if (data.empty()) continue;
    offsets_[s] += data.size();
    chunks.push_back({{"stream", kStreams[s]}, {"data", as_text(data)}});
  }
  return {{"chunks", chunks}, {"skipped_bytes", skipped}};
}

}  // namespace ojs::worker
