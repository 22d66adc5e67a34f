#include "broker/store/lua_scripts.hpp"

#include <openssl/sha.h>

#include <atomic>
#include <cstdio>
#include <stdexcept>
#include <string_view>

namespace ojs::broker {

namespace {
// The line of _lib.lua that holds the bound, rewritten below.
constexpr std::string_view kBoundLine = "local EVENTS_MAXLEN = 10000";
std::atomic<long long> bound{10000};
std::atomic<bool> frozen{false};

std::string sha1_hex(const std::string& text) {
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  char hex[SHA_DIGEST_LENGTH * 2 + 1];
  for (int i = 0; i < SHA_DIGEST_LENGTH; ++i) std::snprintf(hex + 2 * i, 3, "%02x", digest[i]);
  return hex;
}

// The library text with `suffix` after each name ("_<hash>"; "" for the text that is hashed).
// bench/lua-profile.py builds the same text: change both together.
std::string library_text(const std::vector<LuaScriptSource>& sources, const std::string& suffix) {
  std::string out = "#!lua name=ojs" + suffix + "\n";
  for (const auto& s : sources)
    if (s.name.starts_with('_')) out += s.body + "\n";
  for (const auto& s : sources) {
    if (s.name.starts_with('_')) continue;
    out += "redis.register_function{function_name = '" + s.name + suffix +
           "', callback = function(KEYS, ARGV)\nbegin_call()\n" + s.body + "\nend}\n";
  }
  return out;
}
}  // namespace

void set_event_stream_bound(long long max_len) {
  if (max_len < 0) throw std::invalid_argument("event stream bound must be >= 0");
  if (frozen && max_len != bound) throw std::logic_error("the event stream bound is set before the scripts are loaded");
  bound = max_len;
}

long long event_stream_bound() { return bound; }

const LuaLibrary& lua_library() {
  static const LuaLibrary library = [] {
    frozen = true;
    auto sources = embedded_lua_sources();
    bool bound_found = false;
    for (auto& s : sources) {
      const auto at = s.body.find(kBoundLine);
      if (at == std::string::npos) continue;
      s.body.replace(at, kBoundLine.size(), "local EVENTS_MAXLEN = " + std::to_string(bound.load()));
      bound_found = true;
    }
    if (!bound_found) throw std::logic_error("the Lua helpers lack _lib.lua's event bound line");
    std::string suffix(1, '_');
    suffix += sha1_hex(library_text(sources, "")).substr(0, 12);
    LuaLibrary out{"ojs" + suffix, library_text(sources, suffix), {}};
    for (const auto& s : sources)
      if (!s.name.starts_with('_')) out.functions.emplace(s.name, s.name + suffix);
    return out;
  }();
  return library;
}

}  // namespace ojs::broker
