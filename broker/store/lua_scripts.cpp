#include "broker/store/lua_scripts.hpp"

#include <atomic>
#include <stdexcept>
#include <string_view>

namespace ojs::broker {

namespace {
// The line of _lib.lua that holds the bound, rewritten below.
constexpr std::string_view kBoundLine = "local EVENTS_MAXLEN = 10000";
std::atomic<long long> bound{10000};
std::atomic<bool> frozen{false};
}  // namespace

void set_event_stream_bound(long long max_len) {
  if (max_len < 0) throw std::invalid_argument("event stream bound must be >= 0");
  if (frozen && max_len != bound) throw std::logic_error("the event stream bound is set before the scripts are loaded");
  bound = max_len;
}

long long event_stream_bound() { return bound; }

const std::vector<LuaScriptSource>& lua_script_sources() {
  static const std::vector<LuaScriptSource> scripts = [] {
    frozen = true;
    auto out = embedded_lua_sources();
    const std::string line = "local EVENTS_MAXLEN = " + std::to_string(bound.load());
    for (auto& s : out) {
      const auto at = s.body.find(kBoundLine);
      if (at == std::string::npos) throw std::logic_error("Lua script " + s.name + " lacks _lib.lua's event bound");
      s.body.replace(at, kBoundLine.size(), line);
    }
    return out;
  }();
  return scripts;
}

}  // namespace ojs::broker
