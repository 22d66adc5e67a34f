// Bearer tokens are never stored: the token file holds their SHA-256, and a
// presented token is hashed and compared in constant time (OpenSSL CRYPTO_memcmp),
// so neither the file nor response timing reveals a token.
#pragma once
#include <string>
#include <string_view>

#include "ojs/core/digest.hpp"

namespace ojs::broker::auth {

// A token's hash: lowercase hex SHA-256, as `printf %s TOKEN | sha256sum` prints it.
using ojs::sha256_hex;

// Constant-time equality of two strings of equal length; false when lengths differ
// (the length of a hex digest is public).
bool constant_time_equal(std::string_view a, std::string_view b);

}  // namespace ojs::broker::auth
