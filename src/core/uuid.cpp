#include "ojs/core/uuid.hpp"

#include <openssl/rand.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <random>

#include "ojs/core/time.hpp"

namespace ojs {

std::string make_uuidv7() {
  std::array<unsigned char, 16> b{};
  // RAND_bytes costs ~38k instructions a call whatever it returns (a tenth of a PUSH,
  // docs/benchmarks.md): each thread draws 64 ids' worth at once.
  thread_local std::array<unsigned char, 16 * 64> pool{};
  thread_local std::size_t used = pool.size();
  if (used == pool.size()) {
    if (RAND_bytes(pool.data(), static_cast<int>(pool.size())) != 1) {
      thread_local std::mt19937_64 fallback{std::random_device{}()};
      for (auto& byte : pool) byte = static_cast<unsigned char>(fallback());
    }
    used = 0;
  }
  std::copy_n(pool.begin() + static_cast<std::ptrdiff_t>(used), b.size(), b.begin());
  used += b.size();
  const auto ms = static_cast<std::uint64_t>(now_ms());
  for (int i = 0; i < 6; ++i) b[i] = static_cast<unsigned char>(ms >> (40 - 8 * i));
  b[6] = static_cast<unsigned char>(0x70 | (b[6] & 0x0f));
  b[8] = static_cast<unsigned char>(0x80 | (b[8] & 0x3f));
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    out.push_back(hex[b[i] >> 4]);
    out.push_back(hex[b[i] & 0x0f]);
  }
  return out;
}

bool is_uuidv7(std::string_view s) {
  if (s.size() != 36) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-') return false;
    } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      return false;
    }
  }
  if (s[14] != '7') return false;
  const char variant = s[19];
  return variant == '8' || variant == '9' || variant == 'a' || variant == 'b';
}

}  // namespace ojs
