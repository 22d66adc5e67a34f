// Hex, SHA-256 and HMAC-SHA256, the one definition for the tree: token hashes, uniqueness
// keys, requirement-class ids, capability fingerprints, model checksums, the Lua library
// name, webhook signatures.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace ojs {

// Lowercase hex of `size` bytes.
std::string hex_lower(const unsigned char* bytes, std::size_t size);

// Lowercase hex SHA-256 (64 characters), as `printf %s DATA | sha256sum` prints it.
std::string sha256_hex(std::string_view data);

// Its first 16 hex characters (64 bits): short stable ids (requirement classes,
// capability fingerprints), where collisions are negligible at the scale of
// distinct shapes.
std::string sha256_hex16(std::string_view data);

// Lowercase hex HMAC-SHA256 (64 characters) of `data` under `key` (RFC 2104), as
// `printf %s DATA | openssl dgst -sha256 -hmac KEY` prints it.
std::string hmac_sha256_hex(std::string_view key, std::string_view data);

// Lowercase hex SHA-1 (40 characters): names derived from text, not security.
std::string sha1_hex(std::string_view data);

}  // namespace ojs
