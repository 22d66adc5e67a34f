// Per-script includes for the Redis Function library: each script gets only the
// helper definitions it names, directly or through other helpers, in a scope of
// its own. With every helper at the library's top level, each script saw all of
// them: Lua 5.1 allows 200 active locals per function and 60 upvalues per
// closure, and the whole library was one function near those limits.
//
// A helper file's top level holds only definitions (cmake/embed_lua.cmake checks
// it): `local function name`, `local UPPER = ...` and `local per_call = {}`. Each
// starts on a line beginning with `local ` and runs to the next such line. A
// definition depends on every earlier definition whose name appears in its code
// outside comments and after no `.` or `:` (a field, not a helper); helpers may
// only name earlier ones (Lua resolves a local at its definition), so keeping the
// files' order keeps each reference bound as it was.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "broker/store/lua_scripts.hpp"

namespace ojs::broker {

struct LuaDefinition {
  std::vector<std::string> names;  // the locals it defines
  std::string text;                // its lines, as in the file
  std::vector<std::size_t> uses;   // indexes of the earlier definitions it names
};

// Every helper file's definitions, in file order (the sources' order, then the lines').
std::vector<LuaDefinition> lua_definitions(const std::vector<LuaScriptSource>& sources);

// The indexes of the definitions a script body needs, in definition order: those it
// names, those they name, and so on. `also` lists names always needed (begin_call).
std::vector<std::size_t> lua_includes(const std::vector<LuaDefinition>& defs, const std::string& body,
                                      const std::vector<std::string>& also = {});

// The helper names a piece of code refers to (its upvalues among the definitions).
std::vector<std::string> lua_helpers_named(const std::vector<LuaDefinition>& defs, const std::string& code);

}  // namespace ojs::broker
