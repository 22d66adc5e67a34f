#include "broker/store/lua_includes.hpp"

#include <algorithm>
#include <cctype>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace ojs::broker {

namespace {

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The level of a long bracket opening at `at` ("[[" 0, "[=[" 1, ...), or -1.
int long_bracket(std::string_view s, std::size_t at) {
  if (at >= s.size() || s[at] != '[') return -1;
  std::size_t i = at + 1;
  while (i < s.size() && s[i] == '=') ++i;
  return i < s.size() && s[i] == '[' ? static_cast<int>(i - at - 1) : -1;
}

// Past the long bracket of `level` that opened before `from`.
std::size_t skip_long(std::string_view s, std::size_t from, int level) {
  const std::string close = "]" + std::string(static_cast<std::size_t>(level), '=') + "]";
  const auto end = s.find(close, from);
  return end == std::string_view::npos ? s.size() : end + close.size();
}

// Calls f(name) for each identifier of the code outside comments and strings that
// is not a field (after `.` or `:`, `..` being concatenation; or a key of a table
// constructor). A name too many only includes a helper too many.
template <typename F>
void each_reference(std::string_view s, F&& f) {
  // The last two characters of code seen (comments and spaces aside; a string or
  // a number counts as one character): a name after `.` or `:` is a field.
  char prev = '\n', prev2 = '\n';
  const auto saw = [&](char c) { prev2 = prev, prev = c; };
  std::size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == '-' && i + 1 < s.size() && s[i + 1] == '-') {
      const int level = long_bracket(s, i + 2);
      if (level >= 0) {
        i = skip_long(s, i + 4 + static_cast<std::size_t>(level), level);
      } else {
        const auto eol = s.find('\n', i);
        i = eol == std::string_view::npos ? s.size() : eol;
      }
    } else if (c == '\'' || c == '"') {
      for (++i; i < s.size() && s[i] != c; ++i)
        if (s[i] == '\\') ++i;
      ++i;
      saw('"');
    } else if (const int level = long_bracket(s, i); level >= 0) {
      i = skip_long(s, i + 2 + static_cast<std::size_t>(level), level);
      saw('"');
    } else if (ident_start(c)) {
      const std::size_t start = i;
      while (i < s.size() && ident_char(s[i])) ++i;
      std::size_t after = i;
      while (after < s.size() && std::isspace(static_cast<unsigned char>(s[after]))) ++after;
      const bool assigned = after < s.size() && s[after] == '=' && (after + 1 >= s.size() || s[after + 1] != '=');
      const bool field = prev == ':' || (prev == '.' && prev2 != '.') ||
                         (assigned && (prev == '{' || prev == ','));  // {name = v, name = v}: a table's keys
      if (!field) f(s.substr(start, i - start));
      saw('a');
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      while (i < s.size() && (ident_char(s[i]) || s[i] == '.')) ++i;  // 1e5, 0x1F: not names
      saw('0');
    } else {
      if (!std::isspace(static_cast<unsigned char>(c))) saw(c);
      ++i;
    }
  }
}

// The names a top-level definition line declares: `local function f(` or `local A, B =`.
std::vector<std::string> declared_names(std::string_view line) {
  line.remove_prefix(std::string_view("local ").size());
  if (line.starts_with("function ")) line.remove_prefix(std::string_view("function ").size());
  std::vector<std::string> names;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == ',')) ++i;
    if (i >= line.size() || !ident_start(line[i])) break;
    const std::size_t start = i;
    while (i < line.size() && ident_char(line[i])) ++i;
    names.emplace_back(line.substr(start, i - start));
    while (i < line.size() && line[i] == ' ') ++i;
    if (i >= line.size() || line[i] != ',') break;
  }
  return names;
}

}  // namespace

std::vector<LuaDefinition> lua_definitions(const std::vector<LuaScriptSource>& sources) {
  std::vector<LuaDefinition> defs;
  std::unordered_map<std::string, std::size_t> index;  // name -> its (latest) definition
  for (const auto& source : sources) {
    if (!source.name.starts_with('_')) continue;
    std::string_view body = source.body;
    const std::size_t first_def = defs.size();
    std::size_t at = 0;
    while (at < body.size()) {
      const auto eol = body.find('\n', at);
      const std::size_t next = eol == std::string_view::npos ? body.size() : eol + 1;
      const std::string_view line = body.substr(at, next - at);
      if (line.starts_with("local ")) {
        defs.push_back({declared_names(line), std::string(line), {}});
      } else if (defs.size() > first_def) {
        defs.back().text += line;  // the definition's body, or comments after it
      }
      at = next;
    }
    for (std::size_t d = first_def; d < defs.size(); ++d) {
      std::unordered_set<std::size_t> uses;
      each_reference(defs[d].text, [&](std::string_view name) {
        const auto it = index.find(std::string(name));
        if (it != index.end()) uses.insert(it->second);
      });
      defs[d].uses.assign(uses.begin(), uses.end());
      std::sort(defs[d].uses.begin(), defs[d].uses.end());
      for (const auto& name : defs[d].names) index[name] = d;  // visible to the definitions after it
    }
  }
  return defs;
}

std::vector<std::string> lua_helpers_named(const std::vector<LuaDefinition>& defs, const std::string& code) {
  std::unordered_set<std::string> known;
  for (const auto& d : defs) known.insert(d.names.begin(), d.names.end());
  std::vector<std::string> out;
  each_reference(code, [&](std::string_view name) {
    const std::string n(name);
    if (known.count(n) && std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  });
  return out;
}

std::vector<std::size_t> lua_includes(const std::vector<LuaDefinition>& defs, const std::string& body,
                                      const std::vector<std::string>& also) {
  std::unordered_map<std::string, std::size_t> index;
  for (std::size_t d = 0; d < defs.size(); ++d)
    for (const auto& name : defs[d].names) index[name] = d;  // a script sees the last definition of a name
  std::vector<bool> needed(defs.size(), false);
  std::vector<std::size_t> todo;
  const auto want = [&](const std::string& name) {
    const auto it = index.find(name);
    if (it != index.end() && !needed[it->second]) needed[it->second] = true, todo.push_back(it->second);
  };
  for (const auto& name : also) want(name);
  for (const auto& name : lua_helpers_named(defs, body)) want(name);
  while (!todo.empty()) {
    const std::size_t d = todo.back();
    todo.pop_back();
    for (const std::size_t u : defs[d].uses)
      if (!needed[u]) needed[u] = true, todo.push_back(u);
  }
  std::vector<std::size_t> out;
  for (std::size_t d = 0; d < defs.size(); ++d)
    if (needed[d]) out.push_back(d);
  return out;
}

}  // namespace ojs::broker
