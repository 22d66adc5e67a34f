#include "worker/discovery/filesystem_capacity.hpp"

#include <sys/statvfs.h>

#include <filesystem>

namespace ojs::worker {

std::optional<FilesystemCapacity> filesystem_capacity(const std::string& path) {
  if (path.empty()) return std::nullopt;
  // The scratch directory may not exist yet (it is created per job): measure
  // the filesystem it will live on, i.e. its nearest existing ancestor.
  std::error_code ec;
  std::filesystem::path probe = std::filesystem::absolute(path, ec);
  while (!probe.empty() && !std::filesystem::exists(probe, ec) && probe != probe.parent_path()) probe = probe.parent_path();
  struct statvfs stats {};
  if (statvfs(probe.c_str(), &stats) != 0) return std::nullopt;
  return FilesystemCapacity{static_cast<std::uint64_t>(stats.f_blocks) * stats.f_frsize,
                            static_cast<std::uint64_t>(stats.f_bavail) * stats.f_frsize};
}

}  // namespace ojs::worker
