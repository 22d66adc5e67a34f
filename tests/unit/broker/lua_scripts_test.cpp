// The Lua scripts follow the store's convention (docs/architecture.md "Atomicity"):
// each file has a KEYS/ARGV/Reply header, declares its key count, and never forms
// a key from ARGV or from a literal key name.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "broker/store/lua_scripts.hpp"

namespace {

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::filesystem::path> scripts() {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(OJS_SOURCE_DIR) / "broker/store/lua"))
    if (e.path().extension() == ".lua") out.push_back(e.path());
  return out;
}

}  // namespace

TEST(LuaScripts, EveryScriptHasAKeysArgvReplyHeader) {
  const auto all = scripts();
  ASSERT_GE(all.size(), 10u);
  for (const auto& p : all) {
    if (p.filename().string().front() == '_') continue;  // the shared helpers
    const auto body = read_file(p);
    EXPECT_TRUE(std::regex_search(body, std::regex(R"(-- KEYS \([^)]+\):)"))) << p.filename() << " lacks '-- KEYS (n):'";
    EXPECT_NE(body.find("-- ARGV"), std::string::npos) << p.filename() << " lacks an ARGV line";
    EXPECT_NE(body.find("-- Reply"), std::string::npos) << p.filename() << " lacks a Reply line";
  }
}

TEST(LuaScripts, NoScriptFormsAKeyFromArgvOrALiteral) {
  // A key position (the first argument of redis.call) built by concatenating onto ARGV.
  const std::regex from_argv(R"(redis\.call\('\w+',\s*ARGV\[[^\]]+\]\s*\.\.)");
  const std::regex literal_key(R"(['"]ojs:)");
  for (const auto& p : scripts()) {
    const auto body = read_file(p);
    EXPECT_FALSE(std::regex_search(body, from_argv)) << p.filename() << " concatenates onto an ARGV value";
    EXPECT_FALSE(std::regex_search(body, literal_key)) << p.filename() << " names a key literally";
  }
}

// Only the declared prefix keys are extended with an id: KEYS[n] .. something.
TEST(LuaScripts, KeysAreExtendedOnlyFromDeclaredPrefixKeys) {
  const std::regex keys_concat(R"(KEYS\[(\d+)\]\s*\.\.)");
  for (const auto& p : scripts()) {
    const auto body = read_file(p);
    for (auto it = std::sregex_iterator(body.begin(), body.end(), keys_concat); it != std::sregex_iterator(); ++it) {
      const std::string n = (*it)[1];
      // The header must call that key a prefix.
      const std::regex declared("-- KEYS[^\\n]*(\\n--[^\\n]*)*\\b" + n + " (job|ready) prefix");
      EXPECT_TRUE(std::regex_search(body, declared)) << p.filename() << ": KEYS[" << n << "] is extended but not declared as a prefix";
    }
  }
}

// The Redis Function library: one function per script, every name carrying the
// library's hash, and every function starting a call with fresh per-call state.
TEST(LuaScripts, LibraryRegistersEveryScriptUnderItsHash) {
  const auto& library = ojs::broker::lua_library();
  std::smatch m;
  ASSERT_TRUE(std::regex_match(library.name, m, std::regex("ojs_([0-9a-f]{12})"))) << library.name;
  const std::string hash = m[1];
  EXPECT_TRUE(library.code.starts_with("#!lua name=" + library.name + "\n"));
  std::size_t scripts_seen = 0;
  for (const auto& p : scripts()) {
    const auto name = p.stem().string();
    if (name.front() == '_') continue;
    ++scripts_seen;
    ASSERT_TRUE(library.functions.contains(name)) << name;
    EXPECT_EQ(library.functions.at(name), name + "_" + hash);
    EXPECT_NE(library.code.find("function_name = '" + name + "_" + hash + "', callback = function(KEYS, ARGV)\nbegin_call()\n"),
              std::string::npos) << name;
  }
  EXPECT_EQ(library.functions.size(), scripts_seen);
  EXPECT_NE(library.code.find("local EVENTS_MAXLEN = " + std::to_string(ojs::broker::event_stream_bound()) + "\n"),
            std::string::npos);
}
