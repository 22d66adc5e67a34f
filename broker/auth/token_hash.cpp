#include "broker/auth/token_hash.hpp"

#include <openssl/crypto.h>

namespace ojs::broker::auth {

bool constant_time_equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace ojs::broker::auth
