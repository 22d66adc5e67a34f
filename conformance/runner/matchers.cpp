#include "matchers.hpp"

#include "json_path.hpp"
#include "text.hpp"
#include "ojs/core/time.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <functional>
#include <optional>
#include <regex>
#include <stdexcept>
#include <vector>

namespace ojs::conformance {

using nlohmann::json;

namespace {

MatchResult mismatch(const std::string& expected, const json* actual) {
  return MatchResult::fail("expected " + expected + ", got " + show(actual));
}

// ---- matcher tree -----------------------------------------------------------

class EqualsMatcher final : public Matcher {
 public:
  explicit EqualsMatcher(json value) : value_(std::move(value)) {}
  MatchResult match(const json* actual) const override {
    return actual && *actual == value_ ? MatchResult::pass() : mismatch(describe(), actual);
  }
  std::string describe() const override { return clip(value_.dump()); }

 private:
  json value_;
};

class PredicateMatcher final : public Matcher {
 public:
  PredicateMatcher(std::string name, std::function<bool(const json*)> test)
      : name_(std::move(name)), test_(std::move(test)) {}
  MatchResult match(const json* actual) const override {
    return test_(actual) ? MatchResult::pass() : mismatch(name_, actual);
  }
  std::string describe() const override { return name_; }

 private:
  std::string name_;
  std::function<bool(const json*)> test_;
};

std::string member_label(const std::string& key) {
  const bool plain = !key.empty() && std::all_of(key.begin(), key.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '-';
  });
  return plain ? "." + key : "['" + key + "']";
}

// A pattern key that is not a member may be a path into the object, as the extension
// cases write them: "jobs[0].meta.ojs.federation.source_region",
// "ojs.federation.weights.eu-west-1" (nested members and keys that hold dots, as
// lookup() resolves them). nullptr when it is neither.
const json* path_member(const json& object, const std::string& key) {
  if (key.find_first_of(".[") == std::string::npos) return nullptr;
  try {
    return lookup(object, key);
  } catch (const std::invalid_argument&) {
    return nullptr;  // not a path: the member is missing
  }
}

class ObjectMatcher final : public Matcher {
 public:
  ObjectMatcher(const json& expected, ObjectMode mode) : mode_(mode), text_(clip(expected.dump())) {
    for (const auto& [key, value] : expected.items()) fields_.emplace_back(key, compile(value, mode));
  }
  MatchResult match(const json* actual) const override {
    if (!actual || !actual->is_object()) return mismatch("an object", actual);
    for (const auto& [key, matcher] : fields_) {
      const auto it = actual->find(key);
      auto result = matcher->match(it == actual->end() ? path_member(*actual, key) : &*it);
      if (!result) return result.at(member_label(key));
    }
    if (mode_ == ObjectMode::Exact) {
      for (const auto& [key, value] : actual->items()) {
        const bool known = std::any_of(fields_.begin(), fields_.end(), [&](const auto& f) { return f.first == key; });
        if (!known) return MatchResult::fail("unexpected member (value " + show(&value) + ")").at(member_label(key));
      }
    }
    return MatchResult::pass();
  }
  std::string describe() const override { return text_; }

 private:
  ObjectMode mode_;
  std::string text_;
  std::vector<std::pair<std::string, MatcherPtr>> fields_;
};

class ArrayMatcher final : public Matcher {
 public:
  ArrayMatcher(const json& expected, ObjectMode mode) : text_(clip(expected.dump())) {
    for (const auto& value : expected) items_.push_back(compile(value, mode));
  }
  MatchResult match(const json* actual) const override {
    if (!actual || !actual->is_array()) return mismatch("an array", actual);
    if (actual->size() != items_.size()) {
      return MatchResult::fail("expected " + std::to_string(items_.size()) + " elements " + text_ + ", got " +
                               std::to_string(actual->size()) + " " + show(actual));
    }
    for (std::size_t i = 0; i < items_.size(); ++i) {
      auto result = items_[i]->match(&(*actual)[i]);
      if (!result) return result.at("[" + std::to_string(i) + "]");
    }
    return MatchResult::pass();
  }
  std::string describe() const override { return text_; }

 private:
  std::string text_;
  std::vector<MatcherPtr> items_;
};

// Every operator of an operator object must pass.
class AllOfMatcher final : public Matcher {
 public:
  explicit AllOfMatcher(std::vector<MatcherPtr> parts) : parts_(std::move(parts)) {}
  MatchResult match(const json* actual) const override {
    for (const auto& part : parts_) {
      auto result = part->match(actual);
      if (!result) return result;
    }
    return MatchResult::pass();
  }
  std::string describe() const override { return join(" and "); }
  std::string join(const std::string& sep) const {
    std::string text;
    for (const auto& part : parts_) text += (text.empty() ? "" : sep) + part->describe();
    return text;
  }

 private:
  std::vector<MatcherPtr> parts_;
};

class AnyOfMatcher final : public Matcher {
 public:
  explicit AnyOfMatcher(std::vector<MatcherPtr> options) : all_(options), options_(std::move(options)) {}
  MatchResult match(const json* actual) const override {
    for (const auto& option : options_) {
      if (option->match(actual)) return MatchResult::pass();
    }
    return mismatch(describe(), actual);
  }
  std::string describe() const override { return "one of (" + all_.join(" | ") + ")"; }

 private:
  AllOfMatcher all_;  // only used to render the alternatives
  std::vector<MatcherPtr> options_;
};

MatcherPtr predicate(std::string name, std::function<bool(const json*)> test) {
  return std::make_shared<PredicateMatcher>(std::move(name), std::move(test));
}

// ---- matcher strings --------------------------------------------------------

std::size_t size_of(const json& value) { return value.is_string() ? value.get_ref<const std::string&>().size() : value.size(); }

bool is_string_matching(const json* a, const std::regex& pattern) {
  return a && a->is_string() && std::regex_match(a->get_ref<const std::string&>(), pattern);
}

using Args = std::vector<double>;
struct StringMatcherDef {
  std::string_view name;
  std::size_t arity;
  bool (*test)(const json*, const Args&);
};

const std::regex& uuidv7_regex() {
  static const std::regex re("^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$");
  return re;
}

const std::regex& uuid_regex() {
  static const std::regex re("^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$");
  return re;
}

constexpr StringMatcherDef kStringMatchers[] = {
    {"absent", 0, [](const json* a, const Args&) { return a == nullptr; }},
    {"present", 0, [](const json* a, const Args&) { return a != nullptr; }},
    {"exists", 0, [](const json* a, const Args&) { return a != nullptr; }},  // level 1's spelling of present
    {"string:any", 0, [](const json* a, const Args&) { return a && a->is_string(); }},
    {"string:nonempty", 0, [](const json* a, const Args&) { return a && a->is_string() && size_of(*a) > 0; }},
    {"string:non_empty", 0, [](const json* a, const Args&) { return a && a->is_string() && size_of(*a) > 0; }},  // level-2 spelling
    {"string:uuidv7", 0, [](const json* a, const Args&) { return is_string_matching(a, uuidv7_regex()); }},
    {"string:uuid", 0, [](const json* a, const Args&) { return is_string_matching(a, uuid_regex()); }},
    {"string:datetime", 0,
     [](const json* a, const Args&) {
       return a && a->is_string() && ojs::parse_rfc3339(a->get_ref<const std::string&>()).has_value();
     }},
    {"number:any", 0, [](const json* a, const Args&) { return a && a->is_number(); }},
    {"number:integer", 0, [](const json* a, const Args&) { return a && (a->is_number_integer()); }},
    {"number:positive", 0, [](const json* a, const Args&) { return a && a->is_number() && a->get<double>() > 0; }},
    {"number:range", 2,
     [](const json* a, const Args& r) { return a && a->is_number() && a->get<double>() >= r[0] && a->get<double>() <= r[1]; }},
    {"boolean:any", 0, [](const json* a, const Args&) { return a && a->is_boolean(); }},
    {"object:any", 0, [](const json* a, const Args&) { return a && a->is_object(); }},
    {"object:nonempty", 0, [](const json* a, const Args&) { return a && a->is_object() && !a->empty(); }},
    {"array:any", 0, [](const json* a, const Args&) { return a && a->is_array(); }},
    {"array:nonempty", 0, [](const json* a, const Args&) { return a && a->is_array() && !a->empty(); }},
    {"array:length", 1, [](const json* a, const Args& n) { return a && a->is_array() && double(a->size()) == n[0]; }},
    {"array:min_length", 1, [](const json* a, const Args& n) { return a && a->is_array() && double(a->size()) >= n[0]; }},
    {"array:min", 1, [](const json* a, const Args& n) { return a && a->is_array() && double(a->size()) >= n[0]; }},  // level-2 spelling
    {"array:max_length", 1, [](const json* a, const Args& n) { return a && a->is_array() && double(a->size()) <= n[0]; }},
};

constexpr std::string_view kMatcherPrefixes[] = {"string:", "number:", "boolean:", "object:", "array:"};
// Matchers whose argument is free text, as the level-2 cases write them:
// "one_of:400,422" (the value equals one of the listed numbers or strings),
// "contains:x" / "not_contains:x" (an array holding x, or a string holding x), and
// level 1's "string:contains:x" (a string holding x).
constexpr std::string_view kTextMatcherPrefixes[] = {"one_of:", "contains:", "not_contains:", "string:contains:"};

bool holds(const json& haystack, const std::string& needle) {
  if (haystack.is_string()) return haystack.get_ref<const std::string&>().find(needle) != std::string::npos;
  if (!haystack.is_array()) return false;
  return std::any_of(haystack.begin(), haystack.end(), [&](const json& item) {
    return (item.is_string() && item.get_ref<const std::string&>() == needle) || (!item.is_string() && item.dump() == needle);
  });
}

MatcherPtr compile_text_matcher(const std::string& text) {
  const auto colon = text.find(':');
  const std::string name = text.substr(0, colon), arg = text.substr(colon + 1);
  if (name == "one_of") {
    std::vector<json> options;
    std::size_t start = 0;
    while (start <= arg.size()) {
      const auto comma = std::min(arg.find(',', start), arg.size());
      const std::string piece = trim(arg.substr(start, comma - start));
      if (piece.empty()) throw std::invalid_argument("matcher '" + text + "': empty option");
      char* end = nullptr;
      const double number = std::strtod(piece.c_str(), &end);
      options.push_back(end == piece.c_str() + piece.size() ? json(number) : json(piece));
      start = comma + 1;
    }
    return predicate(text, [options](const json* a) {
      return a && std::any_of(options.begin(), options.end(), [a](const json& o) {
        return o.is_number() ? a->is_number() && a->get<double>() == o.get<double>() : *a == o;
      });
    });
  }
  if (name == "string") {
    const auto needle = arg.substr(std::string("contains:").size());
    if (needle.empty()) throw std::invalid_argument("matcher '" + text + "' needs a value after ':'");
    return predicate(text, [needle](const json* a) { return a && a->is_string() && holds(*a, needle); });
  }
  if (arg.empty()) throw std::invalid_argument("matcher '" + text + "' needs a value after ':'");
  const bool want = name == "contains";
  return predicate(text, [arg, want](const json* a) { return a && holds(*a, arg) == want; });
}

Args parse_args(std::string_view text, std::string_view whole) {
  Args args;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = std::min(text.find(',', start), text.size());
    const std::string piece = trim(text.substr(start, comma - start));
    char* end = nullptr;
    const double value = std::strtod(piece.c_str(), &end);
    if (piece.empty() || end != piece.c_str() + piece.size()) {
      throw std::invalid_argument("matcher '" + std::string(whole) + "': bad number '" + piece + "'");
    }
    args.push_back(value);
    start = comma + 1;
  }
  return args;
}

// A number with low <= x <= high ("~N" and {"range": {min, max}}).
MatcherPtr number_between(std::string name, double low, double high) {
  return predicate(std::move(name), [low, high](const json* a) { return a && a->is_number() && a->get<double>() >= low && a->get<double>() <= high; });
}

// "~1000": a timing, matched with ojs-conformance.md's default tolerance of +/- 50 %.
std::optional<double> approximate_value(std::string_view text) {
  if (text.size() < 2 || text[0] != '~') return std::nullopt;
  const std::string number(text.substr(1));
  char* end = nullptr;
  const double value = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size()) return std::nullopt;
  return value;
}

MatcherPtr compile_matcher_string(const std::string& text) {
  if (const auto around = approximate_value(text)) {
    return number_between(text, *around * 0.5, *around * 1.5);
  }
  for (auto prefix : kTextMatcherPrefixes)
    if (std::string_view(text).starts_with(prefix)) return compile_text_matcher(text);
  // Forms: "name", "name(a,b)", "name:n" (e.g. "array:min_length:1").
  std::string_view name = text;
  Args args;
  if (const auto open = text.find('('); open != std::string::npos) {
    if (text.back() != ')') throw std::invalid_argument("matcher '" + text + "': missing ')'");
    name = std::string_view(text).substr(0, open);
    args = parse_args(std::string_view(text).substr(open + 1, text.size() - open - 2), text);
  } else if (const auto colon = text.rfind(':'); colon != std::string::npos && colon > text.find(':')) {
    name = std::string_view(text).substr(0, colon);
    args = parse_args(std::string_view(text).substr(colon + 1), text);
  }
  for (const auto& def : kStringMatchers) {
    if (def.name != name) continue;
    if (args.size() != def.arity) {
      throw std::invalid_argument("matcher '" + text + "' takes " + std::to_string(def.arity) + " argument(s)");
    }
    return predicate(text, [test = def.test, args](const json* a) { return test(a, args); });
  }
  throw std::invalid_argument("unknown matcher '" + text + "'");
}

// ---- operator objects -------------------------------------------------------

bool has_type(const json& value, const std::string& type) {
  if (type == "string") return value.is_string();
  if (type == "number") return value.is_number();
  if (type == "integer") return value.is_number_integer();
  if (type == "boolean") return value.is_boolean();
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  if (type == "null") return value.is_null();
  throw std::invalid_argument("$type: unknown type '" + type + "'");
}

double number_operand(const std::string& op, const json& value) {
  if (!value.is_number()) throw std::invalid_argument(op + " needs a number");
  return value.get<double>();
}

MatcherPtr compare(const std::string& op, const json& operand) {
  const double bound = number_operand(op, operand);
  static const std::map<std::string, std::function<bool(double, double)>, std::less<>> kOps = {
      {"$gt", std::greater<double>()}, {"$gte", std::greater_equal<double>()},
      {"$lt", std::less<double>()},    {"$lte", std::less_equal<double>()}};
  const auto& fn = kOps.at(op);
  return predicate("{\"" + op + "\":" + operand.dump() + "}",
                   [fn, bound](const json* a) { return a && a->is_number() && fn(a->get<double>(), bound); });
}

class SizeMatcher final : public Matcher {
 public:
  explicit SizeMatcher(MatcherPtr inner) : inner_(std::move(inner)) {}
  MatchResult match(const json* actual) const override {
    if (!actual || !(actual->is_array() || actual->is_object() || actual->is_string())) {
      return mismatch("something with " + describe(), actual);
    }
    const json size = size_of(*actual);
    auto result = inner_->match(&size);
    return result ? result : mismatch(describe(), actual);
  }
  std::string describe() const override { return "size " + inner_->describe(); }

 private:
  MatcherPtr inner_;
};

class ContainsMatcher final : public Matcher {
 public:
  explicit ContainsMatcher(MatcherPtr inner) : inner_(std::move(inner)) {}
  MatchResult match(const json* actual) const override {
    if (actual && actual->is_array()) {
      for (const auto& item : *actual) {
        if (inner_->match(&item)) return MatchResult::pass();
      }
    }
    return mismatch(describe(), actual);
  }
  std::string describe() const override { return "an array containing " + inner_->describe(); }

 private:
  MatcherPtr inner_;
};

MatcherPtr compile_operator(const std::string& op, const json& operand, ObjectMode mode) {
  if (op == "$exists") {
    if (!operand.is_boolean()) throw std::invalid_argument("$exists needs true or false");
    const bool want = operand.get<bool>();
    return predicate(want ? "present" : "absent", [want](const json* a) { return (a != nullptr) == want; });
  }
  if (op == "$type") {
    std::vector<std::string> types;
    if (operand.is_string()) types.push_back(operand.get<std::string>());
    else if (operand.is_array()) types = operand.get<std::vector<std::string>>();
    else throw std::invalid_argument("$type needs a type name or a list of them");
    for (const auto& t : types) has_type(json(), t);  // validates the names
    return predicate("a value of type " + json(types).dump(), [types](const json* a) {
      return a && std::any_of(types.begin(), types.end(), [a](const std::string& t) { return has_type(*a, t); });
    });
  }
  if (op == "$in" || op == "$nin") {
    if (!operand.is_array()) throw std::invalid_argument(op + " needs an array");
    const bool want = op == "$in";
    return predicate((want ? "one of " : "none of ") + clip(operand.dump()), [operand, want](const json* a) {
      const bool found = a && std::find(operand.begin(), operand.end(), *a) != operand.end();
      return found == want;
    });
  }
  if (op == "$match") {
    if (!operand.is_string()) throw std::invalid_argument("$match needs a regular expression string");
    std::regex re;
    try {
      re = std::regex(operand.get<std::string>());
    } catch (const std::regex_error& e) {
      throw std::invalid_argument("$match: bad regular expression " + operand.dump() + ": " + e.what());
    }
    return predicate("a string matching /" + operand.get<std::string>() + "/", [re](const json* a) {
      return a && a->is_string() && std::regex_search(a->get_ref<const std::string&>(), re);
    });
  }
  if (op == "$size") {
    if (!operand.is_number() && !operand.is_object()) throw std::invalid_argument("$size needs a number or operators");
    return std::make_shared<SizeMatcher>(compile(operand, ObjectMode::Exact));
  }
  if (op == "$gt" || op == "$gte" || op == "$lt" || op == "$lte") return compare(op, operand);
  if (op == "$eq") return std::make_shared<EqualsMatcher>(operand);
  if (op == "$ne") {
    return predicate("not " + clip(operand.dump()), [operand](const json* a) { return !a || *a != operand; });
  }
  if (op == "$or") {
    if (!operand.is_array() || operand.empty()) throw std::invalid_argument("$or needs a non-empty array");
    std::vector<MatcherPtr> options;
    for (const auto& option : operand) options.push_back(compile(option, mode));
    return std::make_shared<AnyOfMatcher>(std::move(options));
  }
  if (op == "$contains") return std::make_shared<ContainsMatcher>(compile(operand, ObjectMode::Partial));
  throw std::invalid_argument("unknown operator '" + op + "'");
}

bool is_operator_object(const json& value) {
  if (!value.is_object() || value.empty()) return false;
  std::size_t dollars = 0;
  for (const auto& [key, unused] : value.items()) dollars += key.starts_with('$') ? 1 : 0;
  if (dollars != 0 && dollars != value.size()) {
    throw std::invalid_argument("object mixes $operators with plain keys: " + clip(value.dump()));
  }
  return dollars != 0;
}

}  // namespace

// ---- public API ---------------------------------------------------------------

std::string show(const json* value) { return value ? clip(value->dump()) : "<absent>"; }

bool is_matcher_string(std::string_view text) {
  if (text == "absent" || text == "present" || text == "exists" || approximate_value(text)) return true;
  const auto starts = [text](std::string_view prefix) { return text.starts_with(prefix); };
  return std::any_of(std::begin(kMatcherPrefixes), std::end(kMatcherPrefixes), starts) ||
         std::any_of(std::begin(kTextMatcherPrefixes), std::end(kTextMatcherPrefixes), starts);
}

MatcherPtr compile(const json& expected, ObjectMode mode) {
  if (expected.is_string() && is_matcher_string(expected.get_ref<const std::string&>())) {
    return compile_matcher_string(expected.get<std::string>());
  }
  // Level 1's {"range": {"min": a, "max": b}}: a number with a <= x <= b.
  if (expected.is_object() && expected.size() == 1 && expected.contains("range") && expected["range"].is_object() &&
      expected["range"].size() == 2 && expected["range"].contains("min") && expected["range"].contains("max") &&
      expected["range"]["min"].is_number() && expected["range"]["max"].is_number()) {
    return number_between(expected.dump(), expected["range"]["min"].get<double>(), expected["range"]["max"].get<double>());
  }
  if (is_operator_object(expected)) {
    std::vector<MatcherPtr> parts;
    for (const auto& [op, operand] : expected.items()) parts.push_back(compile_operator(op, operand, mode));
    return parts.size() == 1 ? parts.front() : std::make_shared<AllOfMatcher>(std::move(parts));
  }
  if (expected.is_object()) return std::make_shared<ObjectMatcher>(expected, mode);
  if (expected.is_array()) return std::make_shared<ArrayMatcher>(expected, mode);
  return std::make_shared<EqualsMatcher>(expected);
}

MatchResult match_value(const json* actual, const json& expected, ObjectMode mode) {
  return compile(expected, mode)->match(actual);
}

MatchResult check_status(const json& expected, long status) {
  if (!expected.is_number() && !expected.is_string() && !expected.is_object()) {
    throw std::invalid_argument("status must be a number, a matcher string or an operator object");
  }
  const json actual = status;
  auto result = compile(expected)->match(status == 0 ? nullptr : &actual);
  return result ? result : result.at("status");
}

MatchResult check_headers(const json& expected, const std::map<std::string, std::string>& headers) {
  if (!expected.is_object()) throw std::invalid_argument("headers assertion must be an object");
  for (const auto& [name, want] : expected.items()) {
    const std::string key = lower(name);
    const auto it = headers.find(key);
    const json actual = it == headers.end() ? json() : json(it->second);
    const json* present = it == headers.end() ? nullptr : &actual;
    MatchResult result;
    if (want.is_string() && !is_matcher_string(want.get_ref<const std::string&>())) {
      // Literal: the value before any ';' parameters, trimmed, case-insensitively
      // ("application/openjobspec+json" matches "application/openjobspec+json; charset=utf-8").
      const auto media = [](const std::string& v) { return lower(trim(v.substr(0, v.find(';')))); };
      const bool same = present && media(it->second) == media(want.get<std::string>());
      if (!same) result = mismatch(want.dump(), present);
    } else {
      result = compile(want)->match(present);
    }
    if (!result) return result.at("header " + name);
  }
  return MatchResult::pass();
}

namespace {

// Shared by check_body_assertions (dry == false) and validate_body_assertions
// (dry == true: compile everything, look nothing up, never short-circuit).
MatchResult body_assertions(const json& assertions, const json* body, std::string_view raw, bool dry) {
  if (!assertions.is_object()) {
    const auto matcher = compile(assertions);
    if (dry) return MatchResult::pass();
    auto result = matcher->match(body);
    return result ? result : result.at("$");
  }
  const bool raw_empty = trim(raw).empty();
  for (const auto& [key, expected] : assertions.items()) {
    if (key == "$or" || key == "$and") {
      if (!expected.is_array() || expected.empty()) throw std::invalid_argument(key + " needs a non-empty array");
      std::string failures;
      std::size_t passed = 0;
      for (std::size_t i = 0; i < expected.size(); ++i) {
        const auto result = body_assertions(expected[i], body, raw, dry);
        if (result) ++passed;
        else failures += (failures.empty() ? "" : "; ") + ("[" + std::to_string(i) + "] " + result.message());
      }
      if (dry) continue;
      if (key == "$or" && passed == 0) return MatchResult::fail("no $or alternative matched: " + failures);
      if (key == "$and" && passed != expected.size()) return MatchResult::fail("$and: " + failures);
    } else if (key == "$empty") {
      if (!expected.is_boolean()) throw std::invalid_argument("$empty needs true or false");
      if (!dry && expected.get<bool>() != raw_empty) {
        return MatchResult::fail(raw_empty ? "expected a non-empty body, got an empty body"
                                           : "expected an empty body, got " + clip(std::string(raw)));
      }
    } else if (is_json_path(key)) {
      const auto path = parse_path(key);
      const auto matcher = compile(expected);
      if (dry) continue;
      if (!body && !raw_empty) return MatchResult::fail("response body is not JSON: " + clip(std::string(raw))).at(key);
      if (has_wildcard(path)) {  // "$.crons[*].name": match the array of every value reached
        const auto values = body ? select(*body, path) : std::nullopt;
        auto result = matcher->match(values ? &*values : nullptr);
        if (!result) return result.at(key);
        continue;
      }
      auto result = matcher->match(body ? lookup(*body, path) : nullptr);
      if (!result) return result.at(key);
    } else {
      throw std::invalid_argument("body assertion key '" + key + "' is neither a JSON path ($.x) nor $or/$and/$empty");
    }
  }
  return MatchResult::pass();
}

bool is_assertion_style(const json& pattern) {
  if (!pattern.is_object() || pattern.empty()) return false;
  return std::all_of(pattern.items().begin(), pattern.items().end(), [](const auto& item) {
    const auto& key = item.key();
    return is_json_path(key) || key == "$or" || key == "$and" || key == "$empty";
  });
}

}  // namespace

MatchResult check_body_assertions(const json& assertions, const json* body, std::string_view raw_body) {
  return body_assertions(assertions, body, raw_body, false);
}

void validate_body_assertions(const json& assertions) { body_assertions(assertions, nullptr, {}, true); }

const json* unwrap_job(const json& body, const json& pattern) {
  if (!body.is_object() || !pattern.is_object() || is_operator_object(pattern)) return &body;
  // The pattern names `key` itself, or a path that starts with it ("jobs[0].type").
  const auto mentions = [&pattern](const std::string& key) {
    for (const auto& [k, v] : pattern.items())
      if (k == key || k.rfind(key + "[", 0) == 0 || k.rfind(key + ".", 0) == 0) return true;
    return false;
  };
  if (mentions("job") || mentions("jobs")) return &body;  // written against the wrapper
  if (const auto it = body.find("job"); it != body.end() && it->is_object()) return &*it;
  if (const auto it = body.find("jobs"); it != body.end() && it->is_array()) {
    return it->empty() ? nullptr : &it->front();
  }
  return &body;
}

MatchResult check_body_pattern(const json& pattern, const json* body, std::string_view raw_body) {
  if (is_assertion_style(pattern)) return check_body_assertions(pattern, body, raw_body);
  const auto matcher = compile(pattern, ObjectMode::Partial);
  if (!body) {
    return trim(raw_body).empty() ? MatchResult::fail("expected a body like " + matcher->describe() + ", got an empty body")
                                  : MatchResult::fail("response body is not JSON: " + clip(std::string(raw_body)));
  }
  const json* target = unwrap_job(*body, pattern);
  auto result = matcher->match(target);
  if (result) return result;
  if (target == body) return result.at("$");
  if (body->contains("job")) return result.at("$.job");
  return target ? result.at("$.jobs[0]") : MatchResult::fail("expected a job, got an empty jobs list");
}

MatchResult check_exclusive_claim(const json& spec) {
  if (!spec.is_object() || !spec.contains("fetches") || !spec.at("fetches").is_array()) {
    throw std::invalid_argument("exclusive_claim needs a \"fetches\" array");
  }
  const json job_id = spec.value("job_id", json());
  std::size_t with_job = 0;
  std::size_t empty = 0;
  for (const auto& jobs : spec.at("fetches")) {
    if (jobs.is_null() || (jobs.is_array() && jobs.empty())) ++empty;
    if (jobs.is_array() && std::any_of(jobs.begin(), jobs.end(), [&job_id](const json& job) {
          return job.is_object() && job.contains("id") && (job_id.is_null() || job.at("id") == job_id);
        })) {
      ++with_job;
    }
  }
  const std::string counts = std::to_string(with_job) + " of " + std::to_string(spec.at("fetches").size()) +
                             " fetches got job " + job_id.dump() + ", " + std::to_string(empty) + " got none";
  if (spec.value("exactly_one_has_job", false) && with_job != 1) {
    return MatchResult::fail("exclusive_claim: expected exactly one fetch to get the job; " + counts);
  }
  if (spec.value("exactly_one_empty", false) && empty != 1) {
    return MatchResult::fail("exclusive_claim: expected exactly one fetch to get nothing; " + counts);
  }
  return MatchResult::pass();
}

void validate_body_pattern(const json& pattern) {
  if (is_assertion_style(pattern)) validate_body_assertions(pattern);
  else compile(pattern, ObjectMode::Partial);
}

}  // namespace ojs::conformance
