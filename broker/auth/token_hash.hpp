// Bearer tokens are never stored: the token file holds their SHA-256, and a
// presented token is hashed and compared in constant time (OpenSSL CRYPTO_memcmp),
// so neither the file nor response timing reveals a token.
#pragma once
#include <string>
#include <string_view>

namespace ojs::broker::auth {

// Lowercase hex SHA-256 of the token, as `printf %s TOKEN | sha256sum` prints it.
std::string sha256_hex(std::string_view token);

// Constant-time equality of two strings of equal length; false when lengths differ
// (the length of a hex digest is public).
bool constant_time_equal(std::string_view a, std::string_view b);

}  // namespace ojs::broker::auth
