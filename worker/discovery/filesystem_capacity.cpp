#include "worker/discovery/filesystem_capacity.hpp"

#include <sys/statvfs.h>

namespace ojs::worker {

std::optional<FilesystemCapacity> filesystem_capacity(const std::string& path) {
  struct statvfs stats {};
  if (path.empty() || statvfs(path.c_str(), &stats) != 0) return std::nullopt;
  return FilesystemCapacity{static_cast<std::uint64_t>(stats.f_blocks) * stats.f_frsize,
                            static_cast<std::uint64_t>(stats.f_bavail) * stats.f_frsize};
}

}  // namespace ojs::worker
