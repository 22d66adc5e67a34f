#include "worker/execution/model_integrity.hpp"

#include <openssl/evp.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <vector>

#include "ojs/core/digest.hpp"

namespace ojs::worker {

namespace fs = std::filesystem;

std::string file_digest_hex(const std::string& path, const std::string& algorithm) {
  const EVP_MD* md = EVP_get_digestbyname(algorithm.c_str());
  if (!md) throw std::runtime_error("unsupported checksum algorithm '" + algorithm + "'");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), md, nullptr) != 1) throw std::runtime_error("EVP_DigestInit failed");
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    if (in.gcount() > 0) EVP_DigestUpdate(ctx.get(), buffer.data(), static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) throw std::runtime_error("read error on " + path);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(ctx.get(), digest, &length);
  return hex_lower(digest, length);
}

std::string local_model_path(const JobView& job, const WorkerConfig& config) {
  std::string candidate;
  constexpr std::string_view file_scheme = "file://";
  if (job.model_registry_uri.rfind(file_scheme, 0) == 0) {
    candidate = job.model_registry_uri.substr(file_scheme.size());
  } else if (!job.model_id.empty()) {
    const auto configured = std::find_if(config.models.begin(), config.models.end(),
                                         [&](const ConfiguredModel& m) { return m.model_id == job.model_id; });
    if (configured != config.models.end() && !configured->path.empty())
      candidate = configured->path;
    else if (!config.models_dir.empty())
      candidate = (fs::path(config.models_dir) / job.model_id).string();
  }
  std::error_code ec;
  return (!candidate.empty() && fs::is_regular_file(candidate, ec)) ? candidate : std::string();
}

namespace {

nlohmann::json mismatch_error(const std::string& message, const nlohmann::json& details) {
  return {{"code", "model_checksum_mismatch"}, {"message", message}, {"retryable", false}, {"details", details}};
}

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

}  // namespace

std::optional<nlohmann::json> ModelVerifier::check(const JobView& job, const WorkerConfig& config) {
  if (job.model_checksum.empty()) return std::nullopt;
  const auto colon = job.model_checksum.find(':');
  if (colon == std::string::npos)
    return mismatch_error("ext_ml_model_checksum must be algorithm:hex", {{"checksum", job.model_checksum}});
  const std::string algorithm = lowercase(job.model_checksum.substr(0, colon));
  const std::string expected = lowercase(job.model_checksum.substr(colon + 1));
  const std::string path = local_model_path(job, config);
  if (path.empty()) {
    spdlog::debug("job {} model checksum not verified: weights are not local", job.id);
    return std::nullopt;
  }
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  const auto mtime = fs::last_write_time(path, ec).time_since_epoch();
  const CacheKey key{path, algorithm, size,
                     std::chrono::duration_cast<std::chrono::nanoseconds>(mtime).count()};
  std::string actual;
  if (auto cached = digests_.find(key); cached != digests_.end()) {
    actual = cached->second;
  } else {
    try {
      actual = file_digest_hex(path, algorithm);
    } catch (const std::exception& e) {
      return mismatch_error(std::string("cannot verify model weights: ") + e.what(),
                            {{"path", path}, {"expected", job.model_checksum}});
    }
    digests_[key] = actual;
  }
  if (actual == expected) return std::nullopt;
  return mismatch_error("model weights at " + path + " do not match " + job.model_checksum,
                        {{"path", path}, {"expected", algorithm + ":" + expected}, {"actual", algorithm + ":" + actual}});
}

}  // namespace ojs::worker
