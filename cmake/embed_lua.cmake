# Generates a C++ file with one string constant per Lua file in DIR, sorted by name.
# Files whose name starts with '_' are the shared helpers; broker/store/lua_scripts.cpp
# puts them once at the top of the Redis Function library and each script in a
# function of its own.
#
# A library's top-level locals live as long as the library in Redis, across calls:
# a helper file may hold only functions and UPPER_CASE constants at top level, and
# `per_call` (the one table of state of a single call, replaced before each call).
# Anything else would leak from one call to the next, so it fails the build.
file(GLOB scripts ${DIR}/*.lua)
list(SORT scripts)
set(content "// Generated from broker/store/lua by cmake/embed_lua.cmake. Do not edit.\n#include \"broker/store/lua_scripts.hpp\"\nnamespace ojs::broker {\nconst std::vector<LuaScriptSource>& embedded_lua_sources() {\n  static const std::vector<LuaScriptSource> scripts = {\n")
foreach(script ${scripts})
  get_filename_component(name ${script} NAME_WE)
  file(READ ${script} body)
  if(name MATCHES "^_")
    file(STRINGS ${script} lines REGEX "^local ")
    foreach(line ${lines})
      if(NOT line MATCHES "^local function " AND NOT line MATCHES "^local [A-Z][A-Z0-9_]* = " AND NOT line MATCHES "^local per_call = ")
        message(FATAL_ERROR "${script}: top-level state outlives a call in a Redis Function library; keep it in per_call: ${line}")
      endif()
    endforeach()
  endif()
  string(APPEND content "    {\"${name}\", R\"__lua__(${body})__lua__\"},\n")
endforeach()
string(APPEND content "  };\n  return scripts;\n}\n}  // namespace ojs::broker\n")
file(WRITE ${OUT} "${content}")
