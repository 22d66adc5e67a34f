#include "ojs/core/digest.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <stdexcept>

namespace ojs {

namespace {
std::string digest_hex(std::string_view data, const EVP_MD* md) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), out, &len, md, nullptr) != 1) throw std::runtime_error("EVP_Digest failed");
  return hex_lower(out, len);
}
}  // namespace

std::string hex_lower(const unsigned char* bytes, std::size_t size) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(2 * size, '0');
  for (std::size_t i = 0; i < size; ++i) {
    out[2 * i] = kHex[bytes[i] >> 4];
    out[2 * i + 1] = kHex[bytes[i] & 0x0f];
  }
  return out;
}

std::string sha256_hex(std::string_view data) { return digest_hex(data, EVP_sha256()); }

std::string sha256_hex16(std::string_view data) { return sha256_hex(data).substr(0, 16); }

std::string hmac_sha256_hex(std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()), data.size(),
            out, &len))
    throw std::runtime_error("HMAC failed");
  return hex_lower(out, len);
}

std::string sha1_hex(std::string_view data) { return digest_hex(data, EVP_sha1()); }

}  // namespace ojs
