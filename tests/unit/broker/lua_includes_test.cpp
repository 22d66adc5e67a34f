// Per-script includes: each script of the Redis Function library carries only the
// helpers it names (directly or through other helpers), and none comes near Lua
// 5.1's limits (200 active locals per function, 60 upvalues per closure).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "broker/store/lua_includes.hpp"
#include "broker/store/lua_scripts.hpp"

using ojs::broker::LuaScriptSource;

namespace {

std::vector<std::string> included_names(const std::vector<ojs::broker::LuaDefinition>& defs, const std::string& body) {
  std::vector<std::string> out;
  for (const auto d : ojs::broker::lua_includes(defs, body, {"begin_call"}))
    out.insert(out.end(), defs[d].names.begin(), defs[d].names.end());
  return out;
}

bool has(const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); }

}  // namespace

TEST(LuaIncludes, AScriptGetsWhatItNamesAndWhatThoseName) {
  const std::vector<LuaScriptSource> sources = {
      {"_lib",
       "-- header comment naming unused_helper\n"
       "local per_call = {}\n"
       "local function begin_call() per_call = {} end\n"
       "local LIMIT = 10\n"
       "local function inner(x) return x + LIMIT end\n"
       "local function outer(x)\n  -- inner is named here in a comment only: unused_helper\n  return inner(x)\nend\n"
       "local function unused_helper() return 'outer' end\n"
       "local function field_named() return 1 end\n"},
      {"_lib_more", "local function uses_outer() return outer(1) end\n"},
      {"script", "local t = {field_named = 1}\nreturn outer(t.field_named) .. 'unused_helper' -- uses_outer\n"}};
  const auto defs = ojs::broker::lua_definitions(sources);
  ASSERT_EQ(defs.size(), 8u);
  const auto names = included_names(defs, sources[2].body);
  EXPECT_TRUE(has(names, "outer"));
  EXPECT_TRUE(has(names, "inner"));        // through outer
  EXPECT_TRUE(has(names, "LIMIT"));        // through inner
  EXPECT_TRUE(has(names, "begin_call"));   // always
  EXPECT_TRUE(has(names, "per_call"));     // through begin_call
  EXPECT_FALSE(has(names, "unused_helper"));  // named only in a string and a comment
  EXPECT_FALSE(has(names, "uses_outer"));     // named only in a comment
  EXPECT_FALSE(has(names, "field_named"));    // a table's field, not the helper
  // The definitions keep their order: a helper is emitted after those it names.
  const auto order = ojs::broker::lua_includes(defs, sources[2].body, {"begin_call"});
  EXPECT_TRUE(std::is_sorted(order.begin(), order.end()));
}

TEST(LuaIncludes, LongStringsAndCommentsHideNames) {
  const std::vector<LuaScriptSource> sources = {
      {"_lib", "local function a() return 1 end\nlocal function b() return 2 end\nlocal function c() return 3 end\n"},
      {"script", "--[==[ a() ]==]\nlocal s = [[ b() ]] .. \"c() \\\" a()\"\nreturn s\n"}};
  const auto defs = ojs::broker::lua_definitions(sources);
  const auto names = ojs::broker::lua_helpers_named(defs, sources[1].body);
  EXPECT_TRUE(names.empty()) << names.front();
}

// A call on the line after a comment that ends in a dot is a call, not a field.
TEST(LuaIncludes, ACommentsLastCharacterIsNotCode) {
  const std::vector<LuaScriptSource> sources = {{"_lib", "local function fold() return 1 end\n"},
                                                {"script", "if x then\n  -- folded by later calls.\n  fold()\nend\n"}};
  const auto defs = ojs::broker::lua_definitions(sources);
  EXPECT_EQ(ojs::broker::lua_helpers_named(defs, sources[1].body), std::vector<std::string>{"fold"});
}

// The real library: every script well within Lua's limits, with headroom, so a rule
// added to the claim fails here before Redis refuses to load the library.
TEST(LuaIncludes, EveryScriptStaysWellWithinLuaLimits) {
  constexpr std::size_t kMaxLocals = 150;    // Lua 5.1: 200 active locals per function
  constexpr std::size_t kMaxUpvalues = 45;   // Lua 5.1: 60 upvalues per closure
  const auto& sources = ojs::broker::embedded_lua_sources();
  const auto defs = ojs::broker::lua_definitions(sources);
  for (const auto& d : defs)
    EXPECT_LE(ojs::broker::lua_helpers_named(defs, d.text).size(), kMaxUpvalues) << d.names.front();
  std::size_t all_names = 0;
  for (const auto& d : defs) all_names += d.names.size();
  for (const auto& s : sources) {
    if (s.name.starts_with('_')) continue;
    const auto names = included_names(defs, s.body);
    EXPECT_LE(names.size(), kMaxLocals) << s.name;
    EXPECT_LE(ojs::broker::lua_helpers_named(defs, s.body).size() + 1, kMaxUpvalues) << s.name;  // + begin_call
    if (s.name == "cancel" || s.name == "push") {
      EXPECT_FALSE(has(names, "fair_head")) << s.name << " carries the claim's fair-share helpers";
      // At most 55%: cancel needs 49 of the 97 (the job's end, its use charged and its
      // holding freed, and its workflow advanced, chains pushing their next step).
      EXPECT_LE(names.size() * 20, all_names * 11) << s.name << " carries most of the library (" << names.size() << " of "
                                                    << all_names << ")";
    }
  }
}

// The library as loaded: one scope per script, each with its own per-call state.
TEST(LuaIncludes, LibraryScopesEachScript) {
  const auto& library = ojs::broker::lua_library();
  std::size_t scripts = 0;
  for (const auto& s : ojs::broker::embedded_lua_sources()) scripts += !s.name.starts_with('_');
  std::size_t blocks = 0;
  for (auto at = library.code.find("\ndo\n"); at != std::string::npos; at = library.code.find("\ndo\n", at + 1)) ++blocks;
  EXPECT_EQ(blocks, scripts);
  std::size_t per_call = 0;
  for (auto at = library.code.find("\nlocal per_call = {}"); at != std::string::npos;
       at = library.code.find("\nlocal per_call = {}", at + 1))
    ++per_call;
  EXPECT_EQ(per_call, scripts);
}
