// Verifies local model weights against the job's ext_ml_model_checksum before
// the job runs, so a corrupt or swapped file fails fast and never retries.
#pragma once
#include "worker/config/worker_config.hpp"
#include "worker/execution/job_view.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace ojs::worker {

// Lower-case hex digest of a file, read in 1 MiB chunks (model files are large).
// algorithm is an OpenSSL digest name ("sha256", "sha512", ...). Throws
// std::runtime_error for an unknown algorithm or an unreadable file.
std::string file_digest_hex(const std::string& path, const std::string& algorithm = "sha256");

// The local weights file for the job: file:// registry URI, else the configured
// model's path, else <models_dir>/<model_id>. Empty when none is a regular file.
std::string local_model_path(const JobView& job, const WorkerConfig& config);

class ModelVerifier {
 public:
  // nullopt: verified, or nothing to verify (no checksum, weights not local).
  // Otherwise the NACK error: code "model_checksum_mismatch", retryable false.
  std::optional<nlohmann::json> check(const JobView& job, const WorkerConfig& config);

 private:
  struct CacheKey {
    std::string path;
    std::string algorithm;
    std::uintmax_t size;
    std::int64_t mtime_ns;
    auto operator<=>(const CacheKey&) const = default;
  };
  // Hashing 100+ GB per job would dominate start-up; a file whose size and
  // mtime are unchanged keeps its digest.
  std::map<CacheKey, std::string> digests_;
};

}  // namespace ojs::worker
