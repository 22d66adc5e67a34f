// The Lua sources embedded at build time (see cmake/embed_lua.cmake) and the Redis
// Function library the broker serves them as (Redis >= 7.0).
#pragma once
#include <map>
#include <string>
#include <vector>

namespace ojs::broker {

struct LuaScriptSource {
  std::string name;  // file name without .lua
  std::string body;
};

// As compiled in, sorted by name: the `_lib*` helpers and one file per script.
const std::vector<LuaScriptSource>& embedded_lua_sources();

// Every script as one Redis Function library: the helpers once, then one function
// per script whose callback(KEYS, ARGV) is the script's body (begin_call first:
// no state survives from one call to the next). Loaded once per Redis (FUNCTION
// LOAD), called with FCALL. The library and its functions are named after a hash
// of the text (ojs_<hash12>, <script>_<hash12>): brokers of other versions or
// settings sharing a Redis each call their own code and never replace another's.
// The number of KEYS a script declares in its header, read by the loader:
// "-- KEYS (18):" is exactly 18; "-- KEYS (16 + n):", "(10n)", "(9 + 2n)" are the
// fixed keys plus any number of items of `per_item` keys each.
struct KeyCount {
  std::size_t fixed = 0;
  std::size_t per_item = 0;  // 0: exactly `fixed`
  bool accepts(std::size_t keys) const {
    return keys >= fixed && (per_item == 0 ? keys == fixed : (keys - fixed) % per_item == 0);
  }
};
// The count a script's header declares; throws std::logic_error naming the script
// when the header has none or one the loader cannot read.
KeyCount declared_key_count(const LuaScriptSource& script);

struct LuaLibrary {
  std::string name;  // ojs_<hash12>
  std::string code;  // FUNCTION LOAD's argument
  std::map<std::string, std::string> functions;  // script name -> function name
  std::map<std::string, KeyCount> key_counts;    // script name -> its header's count
};

// Built on first use with the process's settings (the event stream bound).
const LuaLibrary& lua_library();

// Every FCALL is checked against the header (RedisPool::eval): a call passing
// another number of keys than its script declares throws std::logic_error, so a
// header that drifted from its script or its caller fails the first test that calls it.
void check_key_count(const std::string& script, std::size_t keys);

// The approximate length every queue's event stream is capped at (XADD MAXLEN ~);
// 0 turns events off (the scripts emit nothing). Process-wide, like the log level:
// set it before the first RedisPool is built (main does, from --events); later
// calls throw std::logic_error.
void set_event_stream_bound(long long max_len);
long long event_stream_bound();

}  // namespace ojs::broker
