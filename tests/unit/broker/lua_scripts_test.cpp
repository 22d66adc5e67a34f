// The Lua scripts follow the store's convention (docs/architecture.md "Atomicity"):
// each file has a KEYS/ARGV/Reply header, declares its key count, and never forms
// a key from ARGV or from a literal key name.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

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

// The count in a header is the number of keys the script uses: the highest KEYS[n]
// it reads, directly or through a helper handed KEYS and a first index
// (workflow_keys(KEYS, 9, ...) reads 9 .. 19). A fixed count equals it (covers it
// when the script also loops to #KEYS); a count with items ("16 + n") covers its fixed part
// and at most one item: an optional group sent only when needed ("21 + 11n", n = 0 or 1:
// claim.lua's workflow keys) is read by name.
TEST(LuaScripts, EveryHeaderCountsTheKeysItsScriptUses) {
  // Each helper taking (KEYS, first): how far past `first` it reads.
  std::map<std::string, int> helper_span;
  const std::regex helper_def(R"(local function (\w+)\(KEYS, first)");
  for (const auto& p : scripts()) {
    if (p.filename().string().front() != '_') continue;
    const auto body = read_file(p);
    for (auto it = std::sregex_iterator(body.begin(), body.end(), helper_def); it != std::sregex_iterator(); ++it) {
      const auto from = static_cast<std::size_t>(it->position(0));
      const auto to = body.find("\nlocal function", from + 1);
      const std::string def = body.substr(from, to == std::string::npos ? std::string::npos : to - from);
      int span = 0;
      const std::regex offset(R"(KEYS\[first \+ (\d+)\])");
      for (auto o = std::sregex_iterator(def.begin(), def.end(), offset); o != std::sregex_iterator(); ++o)
        span = std::max(span, std::stoi((*o)[1]));
      helper_span[(*it)[1]] = span;
    }
  }
  ASSERT_EQ(helper_span.count("workflow_keys"), 1u);
  EXPECT_EQ(helper_span["workflow_keys"], 10);
  const std::regex literal(R"(KEYS\[(\d+)\])");
  const std::regex helper_call(R"((\w+)\(KEYS, (\d+))");
  const std::regex fixed(R"(-- KEYS \((\d+)\):)");
  const std::regex with_items(R"(-- KEYS \((\d+) \+ (\d*)[a-z]\):)");
  int checked = 0;
  for (const auto& p : scripts()) {
    if (p.filename().string().front() == '_') continue;
    const auto body = read_file(p);
    int used = 0;
    for (auto it = std::sregex_iterator(body.begin(), body.end(), literal); it != std::sregex_iterator(); ++it)
      used = std::max(used, std::stoi((*it)[1]));
    for (auto it = std::sregex_iterator(body.begin(), body.end(), helper_call); it != std::sregex_iterator(); ++it)
      if (helper_span.count((*it)[1])) used = std::max(used, std::stoi((*it)[2]) + helper_span[(*it)[1]]);
    std::smatch m;
    if (std::regex_search(body, m, fixed) && body.find("#KEYS") != std::string::npos) {
      // A loop to #KEYS reads the tail (delete_queue.lua's keys to delete): the count covers what is named.
      EXPECT_GE(std::stoi(m[1]), used) << p.filename() << " declares " << m[1] << " keys and uses KEYS[" << used << "]";
      ++checked;
    } else if (std::regex_search(body, m, fixed)) {
      EXPECT_EQ(std::stoi(m[1]), used) << p.filename() << " declares " << m[1] << " keys and uses KEYS[" << used << "]";
      ++checked;
    } else if (std::regex_search(body, m, with_items)) {
      EXPECT_GE(std::stoi(m[1]) + (m[2].length() > 0 ? std::stoi(m[2]) : 1), used)
          << p.filename() << " declares " << m[1] << " fixed keys and uses KEYS[" << used << "]";
      ++checked;
    }
  }
  EXPECT_GE(checked, 20);
}

// The loader reads every header's count and every FCALL is checked against it
// (RedisPool::eval calls check_key_count): a caller passing another number fails.
TEST(LuaScripts, EveryCallIsCheckedAgainstTheDeclaredCount) {
  using ojs::broker::check_key_count;
  EXPECT_NO_THROW(check_key_count("hold", 8));
  EXPECT_THROW(check_key_count("hold", 9), std::logic_error);
  EXPECT_NO_THROW(check_key_count("cancel", 13));  // 13 + 11n: the workflow keys for a workflow's job
  EXPECT_NO_THROW(check_key_count("cancel", 24));
  EXPECT_THROW(check_key_count("cancel", 23), std::logic_error);
  EXPECT_THROW(check_key_count("cancel", 12), std::logic_error);
  EXPECT_NO_THROW(check_key_count("claim_gang", 29));  // 29 + 2n
  EXPECT_NO_THROW(check_key_count("claim_gang", 31));
  EXPECT_THROW(check_key_count("claim_gang", 28), std::logic_error);
  EXPECT_NO_THROW(check_key_count("push_batch", 33));  // 3 + 10n
  EXPECT_THROW(check_key_count("push_batch", 32), std::logic_error);
  EXPECT_NO_THROW(check_key_count("workflow_create", 13));  // 9 + 2n
  EXPECT_THROW(check_key_count("workflow_create", 12), std::logic_error);
  EXPECT_THROW(check_key_count("no_such_script", 1), std::logic_error);
  try {
    check_key_count("hold", 7);
    FAIL();
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("hold called with 7 keys; its header declares 8"), std::string::npos) << e.what();
  }
  // A header the loader cannot read stops the library from being built.
  using ojs::broker::declared_key_count;
  EXPECT_THROW(declared_key_count({"x", "-- no header\nreturn 1"}), std::logic_error);
  EXPECT_THROW(declared_key_count({"x", "-- KEYS (a few): 1 job\nreturn 1"}), std::logic_error);
  EXPECT_EQ(declared_key_count({"x", "-- KEYS (9 + 2n): ..."}).per_item, 2u);
}

// Only the declared prefix keys are extended with an id: KEYS[n] .. something.
TEST(LuaScripts, KeysAreExtendedOnlyFromDeclaredPrefixKeys) {
  const std::regex keys_concat(R"(KEYS\[(\d+)\]\s*\.\.)");
  for (const auto& p : scripts()) {
    const auto body = read_file(p);
    for (auto it = std::sregex_iterator(body.begin(), body.end(), keys_concat); it != std::sregex_iterator(); ++it) {
      const std::string n = (*it)[1];
      // The header must call that key a prefix.
      const std::regex declared("-- KEYS[^\\n]*(\\n--[^\\n]*)*\\b" + n + " (job|ready|diag|finished|log|run-times) prefix");
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
  const auto bound = std::to_string(ojs::broker::event_stream_bound());
  EXPECT_NE(library.code.find("local EVENTS_MAXLEN = " + bound + "\nlocal EVENTS_MAXLEN_S = '" + bound + "'"), std::string::npos);
}

// The job document does not cross the Lua bridge (issue 52): a transition reads the
// fields it tests (read_fields, or fail.lua's one HMGET) and replies without the job,
// which the broker reads back natively (JobStore::lean_transition). The whole job is
// read into Lua or returned only where listed here: the gang scripts (a gang's start
// returns its members), the sweeps of expired jobs and a workflow's cancel (each job's
// workflow step and event, rare), and claim.lua's discard of an expired head.
TEST(LuaScripts, OnlyTheListedScriptsReadOrReturnTheWholeJob) {
  const std::set<std::string> whole_job{"claim.lua", "claim_gang.lua", "expire_sweep.lua", "gang_leave.lua", "gang_left.lua",
                                        "workflow_cancel.lua"};
  int lean = 0;
  for (const auto& p : scripts()) {
    const auto name = p.filename().string();
    if (name.front() == '_') continue;
    const auto body = read_file(p);
    const bool whole = body.find("read_job(") != std::string::npos || body.find("flat_job(") != std::string::npos;
    if (whole) EXPECT_TRUE(whole_job.count(name)) << name << " reads or returns the whole job: read only the fields it tests";
    else ++lean;
  }
  EXPECT_GE(lean, 40);
}
