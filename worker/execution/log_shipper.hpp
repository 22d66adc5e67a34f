// What a job wrote to stdout and stderr since the last look, as chunks
// for the broker (POST /ojs/v1/workers/logs). The job writes to files (no pipe that
// could fill and stall it); the shipper reads their growth. Bounded: one take reads
// at most `max_take` bytes per stream, and output that grew past `max_bytes` since
// the last look is skipped to its last max_bytes (the most recent output is what is
// kept, as the broker does), so a flood costs neither memory nor bandwidth beyond
// the bound. Chunks are text: bytes that are not UTF-8 become U+FFFD, and a
// character split at the end of what was read waits for the next take.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>

namespace ojs::worker {

struct LogShipSettings {
  double interval_s = 1;                  // between ships of a running job; 0: logs are not shipped
  std::uint64_t max_bytes = 1 << 20;      // kept per job (the broker keeps its own bound too)
  std::uint64_t max_take = 128 * 1024;    // read per stream per ship (JSON may escape a byte as 6)
};

class LogShipper {
 public:
  LogShipper(std::filesystem::path stdout_file, std::filesystem::path stderr_file, LogShipSettings settings)
      : files_{std::move(stdout_file), std::move(stderr_file)}, settings_(settings) {}

  // {chunks: [{stream, data}], skipped_bytes} of what is new; chunks empty when nothing is.
  // `final`: the job has ended, nothing more will be written (a split character is sent as is).
  nlohmann::json take(bool final = false);

 private:
  std::filesystem::path files_[2];
  std::uint64_t offsets_[2] = {0, 0};
  LogShipSettings settings_;
};

}  // namespace ojs::worker
