#include "ojs/core/json_schema.hpp"

#define VALIJSON_USE_EXCEPTIONS 1
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

#include <memory>
#include <new>
#include <optional>
#include <regex>
#include <stdexcept>

#include "ojs/core/bounded_pattern.hpp"
#include "ojs/core/error.hpp"

namespace ojs {

using nlohmann::json;

std::string json_pointer_token(const std::string& name) {
  std::string out;
  for (char c : name) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

struct JsonSchema::Compiled {
  valijson::Schema schema;
};

namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// The quoted name in "...: 'name'." / "... property 'name'."
std::string quoted_name(const std::string& description) {
  const auto end = description.rfind('\'');
  const auto begin = end == std::string::npos || end == 0 ? std::string::npos : description.rfind('\'', end - 1);
  return begin == std::string::npos ? std::string() : description.substr(begin + 1, end - begin - 1);
}

// valijson reports a failure inside a member twice: the member's own error, then
// one at the parent saying the member failed. The latter explains nothing.
bool is_wrapper(const std::string& d) {
  return starts_with(d, "Failed to validate against schema associated with") ||
         starts_with(d, "Failed to validate against additional properties schema") || starts_with(d, "Failed to validate item #") ||
         starts_with(d, "Failed to validate against any child schemas") || starts_with(d, "Failed to validate against child schema #") ||
         starts_with(d, "Failed to validate against any schemas allowed by anyOf");
}

// An array index from the error's context; nullopt when it is not one.
std::optional<std::size_t> index_of(const std::string& name) {
  if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos || name.size() > 18) return std::nullopt;
  return std::stoull(name);
}

// The value at `path` in `document`, or null.
const json* value_at(const json& document, const std::vector<std::string>& path) {
  const json* d = &document;
  for (const auto& name : path) {
    if (d->is_array()) {
      const auto i = index_of(name);
      if (!i || *i >= d->size()) return nullptr;
      d = &(*d)[*i];
    } else if (d->is_object() && d->contains(name)) {
      d = &(*d)[name];
    } else {
      return nullptr;
    }
  }
  return d;
}

// Where an error is: member names (array indices as numbers) from the document's root.
struct Located {
  std::vector<std::string> path;
  std::string rule;
  bool wrapper = false;
};

Located locate(const valijson::ValidationResults::Error& e) {
  Located out;
  for (const auto& c : e.context) {
    if (c == "<root>") continue;
    out.path.push_back(c.size() >= 2 && c.front() == '[' && c.back() == ']' ? c.substr(1, c.size() - 2) : c);
  }
  const auto& d = e.description;
  if (starts_with(d, "Object contains a property that could not be validated")) {
    out.path.push_back(quoted_name(d));
    out.rule = "is not a known member";
  } else if (starts_with(d, "Missing required property")) {
    out.path.push_back(quoted_name(d));
    out.rule = "is required";
  } else if (starts_with(d, "Failed to validate against schema associated with property name")) {
    out.path.push_back(quoted_name(d));
    out.wrapper = true;
  } else {
    out.wrapper = is_wrapper(d);
  }
  if (out.rule.empty()) out.rule = d;
  return out;
}

// The schema that applies at `path` (through properties, additionalProperties,
// items and the object branch of a oneOf/anyOf), or null.
const json* schema_at(const json& schema, const std::vector<std::string>& path, const json& document) {
  const json* s = &schema;
  const json* d = &document;
  for (const auto& name : path) {
    if (!s->is_object()) return nullptr;
    for (const char* choice : {"oneOf", "anyOf"}) {
      if (!s->contains("properties") && !s->contains("additionalProperties") && s->contains(choice))
        for (const auto& branch : (*s)[choice])
          if (branch.value("type", "") == (d->is_array() ? "array" : "object")) s = &branch;
    }
    if (d->is_array()) {
      const auto i = index_of(name);
      if (!s->contains("items") || !i || *i >= d->size()) return nullptr;
      s = &(*s)["items"];
      d = &(*d)[*i];
      continue;
    }
    if (!d->is_object() || !d->contains(name)) return nullptr;
    d = &(*d)[name];
    if (s->contains("properties") && (*s)["properties"].contains(name)) s = &(*s)["properties"][name];
    else if (s->contains("additionalProperties") && (*s)["additionalProperties"].is_object()) s = &(*s)["additionalProperties"];
    else return nullptr;
  }
  return s;
}

// valijson says only that an object failed when one of its member names breaks
// `propertyNames`: find the name and the pattern it breaks.
void explain_property_names(const json& schema, const json& document, Located& at) {
  const json* s = schema_at(schema, at.path, document);
  const json* d = value_at(document, at.path);
  if (!s || !d || !d->is_object() || !s->contains("propertyNames")) return;
  const auto pattern = (*s)["propertyNames"].value("pattern", "");
  if (pattern.empty()) return;
  const std::regex re(pattern, std::regex::ECMAScript);
  for (auto it = d->begin(); it != d->end(); ++it)
    if (!std::regex_search(it.key(), re)) {
      at.path.push_back(it.key());
      at.rule = "the name must match " + pattern;
      at.wrapper = false;
      return;
    }
}

std::string a_type(const std::string& type) {
  if (type == "integer") return "an integer";
  if (type == "object" || type == "array") return "an " + type;
  return "a " + type;
}

std::string bounds(const json& s) {
  std::string out;
  if (s.contains("minimum")) out += " >= " + s["minimum"].dump();
  if (s.contains("exclusiveMinimum")) out += " > " + s["exclusiveMinimum"].dump();
  if (s.contains("maximum")) out += std::string(out.empty() ? "" : " and") + " <= " + s["maximum"].dump();
  return out;
}

// The rule as the schema states it, where valijson's text is about its own checks.
std::string rule_of(const json* s, const std::string& description) {
  if (!s || !s->is_object()) return description;
  if (starts_with(description, "Value type not permitted")) {
    std::vector<std::string> types;
    if (s->contains("type")) {
      for (const auto& t : (*s)["type"].is_array() ? (*s)["type"] : json::array({(*s)["type"]})) types.push_back(a_type(t.get<std::string>()));
    } else if (s->contains("oneOf")) {
      for (const auto& branch : (*s)["oneOf"])
        if (branch.contains("type") && branch["type"].is_string()) types.push_back(a_type(branch["type"].get<std::string>()));
    }
    if (types.empty()) return description;
    std::string out = "must be " + types[0];
    for (std::size_t i = 1; i < types.size(); ++i) out += " or " + types[i];
    return out + bounds(*s);
  }
  if (starts_with(description, "Failed to match against any enum values") && s->contains("enum")) return "must be one of " + (*s)["enum"].dump();
  if (starts_with(description, "Failed to match regex") && s->contains("pattern") && (*s)["pattern"].is_string())
    return "must match " + (*s)["pattern"].get<std::string>();
  if (starts_with(description, "Failed to match expected value set by 'const'") && s->contains("const")) return "must be " + (*s)["const"].dump();
  if (starts_with(description, "Expected number") && !bounds(*s).empty()) return "must be" + bounds(*s);
  return description;
}

// A client schema's `pattern` (renamed "x-ojs-pattern"): valijson's own runs on the
// recursive regex engine, which a long string overflows.
class BoundedPatternConstraint : public valijson::constraints::PolyConstraint {
 public:
  explicit BoundedPatternConstraint(std::shared_ptr<const BoundedPattern> pattern) : pattern_(std::move(pattern)) {}

  bool validate(const valijson::adapters::Adapter& target, const std::vector<std::string>& context,
                valijson::ValidationResults* results) const override {
    if (!target.isString()) return true;  // a pattern constrains strings only
    const std::string text = target.asString();
    const bool within_budget = PatternBudget::take(text.size() * pattern_->weight());
    if (within_budget && pattern_->found_in(text)) return true;
    if (results)
      results->pushError(context, within_budget ? "must match the pattern " + pattern_->source()
                                                : "is more than this document's pattern checks may take (a shorter value, or fewer)");
    return false;
  }

 private:
  Constraint* cloneInto(void* memory) const override { return new (memory) BoundedPatternConstraint(*this); }
  size_t sizeOf() const override { return sizeof(BoundedPatternConstraint); }
  std::shared_ptr<const BoundedPattern> pattern_;
};

class BoundedPatternBuilder : public valijson::ConstraintBuilder {
 public:
  valijson::constraints::Constraint* make(const valijson::adapters::Adapter& value) const override {
    if (!value.isString()) throw std::runtime_error("x-ojs-pattern must be a string");
    return new BoundedPatternConstraint(std::make_shared<const BoundedPattern>(value.asString()));
  }
};

}  // namespace

JsonSchema::JsonSchema(json schema) : JsonSchema(std::move(schema), false) {}

JsonSchema JsonSchema::of_client(json prepared) { return JsonSchema(std::move(prepared), true); }

JsonSchema::JsonSchema(json schema, bool client) : document_(std::move(schema)), compiled_(std::make_unique<Compiled>()) {
  valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
  if (client) parser.addConstraintBuilder("x-ojs-pattern", new BoundedPatternBuilder());  // the parser deletes it
  valijson::adapters::NlohmannJsonAdapter adapter(document_);
  parser.populateSchema(adapter, compiled_->schema);
}

JsonSchema::~JsonSchema() = default;
JsonSchema::JsonSchema(JsonSchema&&) noexcept = default;

JsonSchema JsonSchema::at(const std::string& pointer) const { return JsonSchema(document_.at(json::json_pointer(pointer))); }

void JsonSchema::check(const json& document, const std::string& field_prefix, const std::string& pointer_prefix) const {
  valijson::Validator validator(valijson::Validator::kStrongTypes);
  valijson::ValidationResults results;
  valijson::adapters::NlohmannJsonAdapter target(document);
  if (validator.validate(compiled_->schema, target, &results)) return;
  // The deepest error names the member that broke a rule; valijson lists it
  // before the errors of the members around it.
  std::optional<Located> best;
  for (const auto& e : results) {
    auto at = locate(e);
    if (!best || at.path.size() > best->path.size() || (at.path.size() == best->path.size() && best->wrapper && !at.wrapper))
      best = std::move(at);
  }
  if (!best) throw invalid_field(field_prefix.empty() ? "$" : field_prefix, "does not match the schema", pointer_prefix);
  if (best->wrapper) explain_property_names(document_, document, *best);
  best->rule = rule_of(schema_at(document_, best->path, document), best->rule);
  std::string field = field_prefix, pointer = pointer_prefix;
  std::vector<std::string> walked;
  for (const auto& name : best->path) {
    pointer += '/';
    pointer += json_pointer_token(name);
    const json* parent = value_at(document, walked);
    walked.push_back(name);
    if (parent && parent->is_array()) continue;  // the field names the array, the pointer its item
    if (!field.empty() && field.back() != '.') field += ".";
    field += name;
  }
  if (!field.empty() && field.back() == '.') field.pop_back();
  throw invalid_field(field.empty() ? "$" : field, best->rule, pointer);  // "" (the whole document): no pointer
}

}  // namespace ojs
