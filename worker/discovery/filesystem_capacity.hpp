// Sizes of the filesystems jobs care about, via statvfs.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace ojs::worker {

struct FilesystemCapacity {
  std::uint64_t total_bytes = 0;
  std::uint64_t available_bytes = 0;  // what an unprivileged job can still write
};

// Of the filesystem holding path (or its nearest existing ancestor); empty when unreadable.
std::optional<FilesystemCapacity> filesystem_capacity(const std::string& path);

}  // namespace ojs::worker
