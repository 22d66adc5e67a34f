// The Lua sources embedded at build time (see cmake/embed_lua.cmake).
#pragma once
#include <string>
#include <vector>

namespace ojs::broker {

struct LuaScriptSource {
  std::string name;  // file name without .lua
  std::string body;
};

const std::vector<LuaScriptSource>& lua_script_sources();

}  // namespace ojs::broker
