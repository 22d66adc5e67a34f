// The Lua sources embedded at build time (see cmake/embed_lua.cmake).
#pragma once
#include <string>
#include <vector>

namespace ojs::broker {

struct LuaScriptSource {
  std::string name;  // file name without .lua
  std::string body;
};

// As compiled in (cmake/embed_lua.cmake).
const std::vector<LuaScriptSource>& embedded_lua_sources();

// As loaded into Redis: the embedded sources with the process's settings applied
// (today the event stream bound, see set_event_stream_bound).
const std::vector<LuaScriptSource>& lua_script_sources();

// The approximate length every queue's event stream is capped at (XADD MAXLEN ~);
// 0 turns events off (the scripts emit nothing). Process-wide, like the log level:
// set it before the first RedisPool is built (main does, from --events); later
// calls throw std::logic_error.
void set_event_stream_bound(long long max_len);
long long event_stream_bound();

}  // namespace ojs::broker
