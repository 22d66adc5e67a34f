// Short stable digests for class ids and capability fingerprints.
#pragma once
#include <string>
#include <string_view>

namespace ojs::ml {

// First 16 hex chars (64 bits) of SHA-256: collisions are negligible at the
// scale of distinct requirement shapes or worker configurations.
std::string sha256_hex16(std::string_view data);

}  // namespace ojs::ml
