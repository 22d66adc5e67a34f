#include "broker/store/lua_scripts.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <numeric>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "broker/store/lua_includes.hpp"
#include "broker/store/priority_score.hpp"
#include "ojs/core/digest.hpp"

namespace ojs::broker {

namespace {
// The lines of _lib.lua that hold the bound (as a number and as XADD's argument),
// rewritten below.
constexpr std::string_view kBoundLine = "local EVENTS_MAXLEN = 10000\nlocal EVENTS_MAXLEN_S = '10000'";
std::atomic<long long> bound{10000};
std::atomic<bool> frozen{false};

// The library text with `suffix` after each name ("_<hash>"; "" for the text that is
// hashed): each script in a `do` block of its own holding only the helper
// definitions it needs (lua_includes.hpp), so no function of the library carries
// every helper as a local or an upvalue. bench/lua-profile.py loads this text as the
// broker prints it (--print-lua-library).
std::string library_text(const std::vector<LuaScriptSource>& sources, const std::string& suffix) {
  const auto defs = lua_definitions(sources);
  std::string out = "#!lua name=ojs" + suffix + "\n";
  for (const auto& s : sources) {
    if (s.name.starts_with('_')) continue;
    out += "do\n";
    for (const std::size_t d : lua_includes(defs, s.body, {"begin_call"})) out += defs[d].text;
    out += "redis.register_function{function_name = '" + s.name + suffix +
           "', callback = function(KEYS, ARGV)\nbegin_call()\n" + s.body + "\nend}\nend\n";
  }
  return out;
}
}  // namespace

KeyCount declared_key_count(const LuaScriptSource& script) {
  const auto bad = [&](const std::string& why) {
    return std::logic_error("Lua script " + script.name + ": " + why + " (the header declares \"-- KEYS (18):\" or \"-- KEYS (16 + n):\")");
  };
  const auto at = script.body.find("-- KEYS (");
  if (at == std::string::npos) throw bad("no KEYS header");
  const auto open = at + std::string_view("-- KEYS (").size();
  const auto close = script.body.find("):", open);
  if (close == std::string::npos) throw bad("unreadable KEYS header");
  KeyCount count;
  std::size_t items_gcd = 0;
  std::string_view terms(script.body.data() + open, close - open);
  while (!terms.empty()) {
    const auto plus = terms.find('+');
    std::string_view term = terms.substr(0, plus);
    terms = plus == std::string_view::npos ? std::string_view() : terms.substr(plus + 1);
    while (!term.empty() && term.front() == ' ') term.remove_prefix(1);
    while (!term.empty() && term.back() == ' ') term.remove_suffix(1);
    std::size_t digits = 0, value = 0;
    while (digits < term.size() && std::isdigit(static_cast<unsigned char>(term[digits])))
      value = value * 10 + static_cast<std::size_t>(term[digits++] - '0');
    if (digits == term.size() && digits > 0) {
      count.fixed += value;  // "18"
    } else if (digits + 1 == term.size() && std::islower(static_cast<unsigned char>(term.back()))) {
      items_gcd = std::gcd(items_gcd, digits == 0 ? 1 : value);  // "n", "2n", "10n"
    } else {
      throw bad("unreadable term '" + std::string(term) + "' in the KEYS count");
    }
  }
  count.per_item = items_gcd;
  return count;
}

void check_key_count(const std::string& script, std::size_t keys) {
  const auto& counts = lua_library().key_counts;
  const auto it = counts.find(script);
  if (it == counts.end()) throw std::logic_error("unknown Lua script: " + script);
  if (!it->second.accepts(keys))
    throw std::logic_error("Lua script " + script + " called with " + std::to_string(keys) + " keys; its header declares " +
                           std::to_string(it->second.fixed) +
                           (it->second.per_item ? " + " + std::to_string(it->second.per_item) + "n" : std::string()));
}

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
      const auto n = std::to_string(bound.load());
      s.body.replace(at, kBoundLine.size(), "local EVENTS_MAXLEN = " + n + "\nlocal EVENTS_MAXLEN_S = '" + n + "'");
      bound_found = true;
    }
    if (!bound_found) throw std::logic_error("the Lua helpers lack _lib.lua's event bound line");
    // The score rule's constants, written on both sides of the language line: the
    // library is refused when _lib.lua's (or _lib_fairshare.lua's) differ
    // from priority_score.hpp's.
    const std::pair<std::string, std::string> constants[] = {
        {"_lib", "local SCORE_BAND = " + std::to_string(static_cast<long long>(kScoreBand)) + " "},
        {"_lib", "local SCORE_BANDS = " + std::to_string(kScoreBands) + " "},
        {"_lib_fairshare", "local FAIR_CLASS_SLOTS = " + std::to_string(kMaxFairSlots) + " "}};
    for (const auto& [lib, line] : constants) {
      const bool found = std::any_of(sources.begin(), sources.end(), [&](const LuaScriptSource& s) {
        return s.name == lib && s.body.find("\n" + line) != std::string::npos;
      });
      if (!found) throw std::logic_error(lib + ".lua lacks '" + line + "' (broker/store/priority_score.hpp)");
    }
    std::string suffix(1, '_');
    suffix += sha1_hex(library_text(sources, "")).substr(0, 12);
    LuaLibrary out{"ojs" + suffix, library_text(sources, suffix), {}, {}};
    for (const auto& s : sources)
      if (!s.name.starts_with('_')) {
        out.functions.emplace(s.name, s.name + suffix);
        out.key_counts.emplace(s.name, declared_key_count(s));
      }
    return out;
  }();
  return library;
}

}  // namespace ojs::broker
