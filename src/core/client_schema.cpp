#include "ojs/core/client_schema.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <stdexcept>
#include <vector>

#include "ojs/core/bounded_pattern.hpp"
#include "ojs/core/error.hpp"
#include "ojs/core/json_schema.hpp"

namespace ojs {

using nlohmann::json;

namespace {

// Keywords whose meaning valijson's draft 7 rules would drop: refused, so that a
// registered schema never checks less than it says.
const std::map<std::string, std::string>& unsupported() {
  static const std::map<std::string, std::string> kWhy = {
      {"patternProperties", "is not supported (its patterns would run unbounded); use propertyNames with a pattern"},
      {"unevaluatedProperties", "is not supported by this registry"},
      {"unevaluatedItems", "is not supported by this registry"},
      {"minContains", "is not supported by this registry"},
      {"maxContains", "is not supported by this registry"},
      {"$dynamicRef", "is not supported: only references inside the schema (#/...)"},
      {"$dynamicAnchor", "is not supported: only references inside the schema (#/...)"},
      {"$recursiveRef", "is not supported: only references inside the schema (#/...)"},
      {"$recursiveAnchor", "is not supported: only references inside the schema (#/...)"},
      {"$anchor", "is not supported: reference by JSON pointer (#/...)"},
  };
  return kWhy;
}

// Calls f(child, child's pointer, applies to the same value) for every subschema of `node`.
template <typename Json, typename F>
void for_each_subschema(Json& node, const std::string& at, F&& f) {
  if (!node.is_object()) return;
  for (const char* k : {"not", "if", "then", "else"})
    if (node.contains(k)) f(node[k], at + "/" + k, true);
  for (const char* k : {"additionalProperties", "additionalItems", "contains", "propertyNames"})
    if (node.contains(k)) f(node[k], at + "/" + k, false);
  for (const char* k : {"allOf", "anyOf", "oneOf"})
    if (node.contains(k) && node[k].is_array())
      for (std::size_t i = 0; i < node[k].size(); ++i) f(node[k][i], at + "/" + k + "/" + std::to_string(i), true);
  if (node.contains("items")) {
    auto& items = node["items"];
    if (items.is_array())
      for (std::size_t i = 0; i < items.size(); ++i) f(items[i], at + "/items/" + std::to_string(i), false);
    else
      f(items, at + "/items", false);
  }
  for (const char* k : {"properties", "definitions", "$defs", "dependencies"})
    if (node.contains(k) && node[k].is_object())
      for (auto it = node[k].begin(); it != node[k].end(); ++it)
        if (!it.value().is_array())  // dependencies: an array lists property names
          f(it.value(), at + "/" + k + "/" + json_pointer_token(it.key()), std::string(k) == "dependencies");
}

class Preparation {
 public:
  Preparation(std::string field, std::string pointer) : field_(std::move(field)), pointer_(std::move(pointer)) {}

  OjsError refuse(const std::string& at, const std::string& rule) const {
    std::string field = field_;
    for (std::size_t i = 1; i <= at.size(); ++i)
      field += at[i - 1] == '/' ? '.' : at[i - 1];
    return invalid_field(field, rule, pointer_ + at);
  }

  void rewrite(json& node, const std::string& at) {
    if (node.is_boolean()) return;
    if (!node.is_object()) throw refuse(at, "must be a schema (an object or a boolean)");
    for (const auto& [keyword, why] : unsupported())
      if (node.contains(keyword)) throw refuse(at + "/" + json_pointer_token(keyword), why);
    if (node.contains("$id")) {
      if (!at.empty()) throw refuse(at + "/$id", "is supported at the root only");
      node.erase("$id");
    }
    node.erase("$schema");
    if (node.contains("$ref")) {
      const auto& ref = node["$ref"];
      if (!ref.is_string() || ref.get<std::string>().rfind('#', 0) != 0)
        throw refuse(at + "/$ref", "must reference inside the schema (#/...): nothing is fetched");
    }
    if (node.contains("pattern") && node["pattern"].is_string()) {
      try {
        BoundedPattern(node["pattern"].get<std::string>());
      } catch (const std::invalid_argument& e) {
        throw refuse(at + "/pattern", e.what());
      }
      node["x-ojs-pattern"] = std::move(node["pattern"]);
      node.erase("pattern");
    }
    if (node.contains("format")) {
      node["x-ojs-format"] = std::move(node["format"]);
      node.erase("format");
    }
    if (node.contains("prefixItems")) {  // 2020-12's tuple: draft 7's items array, then additionalItems
      if (!node["prefixItems"].is_array()) throw refuse(at + "/prefixItems", "must be an array of schemas");
      if (node.contains("additionalItems")) throw refuse(at + "/additionalItems", "cannot be given with prefixItems (use items)");
      if (node.contains("items")) {
        if (node["items"].is_array()) throw refuse(at + "/items", "must be a schema when prefixItems is given");
        node["additionalItems"] = std::move(node["items"]);
      }
      node["items"] = std::move(node["prefixItems"]);
      node.erase("prefixItems");
    }
    for (const char* dependent : {"dependentRequired", "dependentSchemas"}) {
      if (!node.contains(dependent)) continue;
      if (!node[dependent].is_object()) throw refuse(at + "/" + dependent, "must be an object");
      auto& merged = node["dependencies"];
      if (merged.is_null()) merged = json::object();
      for (auto it = node[dependent].begin(); it != node[dependent].end(); ++it) {
        if (merged.contains(it.key())) throw refuse(at + "/" + dependent + "/" + json_pointer_token(it.key()), "is given twice");
        merged[it.key()] = it.value();
      }
      node.erase(dependent);
    }
    for_each_subschema(node, at, [this](json& child, const std::string& child_at, bool) { rewrite(child, child_at); });
  }

  // Schemas applied to one value in a row ($ref, allOf, not, ...) never loop and
  // stay short: each is a level of the validator's recursion.
  void check_chains(const json& root) {
    collect(root, "");
    for (const auto& [at, next] : same_value_) chain_from(root, at, 1);
  }

 private:
  void collect(const json& node, const std::string& at) {
    auto& next = same_value_[at];
    if (node.is_object() && node.contains("$ref")) next.push_back(ref_target(node["$ref"].get<std::string>(), at));
    for_each_subschema(node, at, [&](const json& child, const std::string& child_at, bool same_value) {
      if (same_value) same_value_[at].push_back(child_at);
      collect(child, child_at);
    });
  }

  std::string ref_target(const std::string& ref, const std::string& at) const {
    std::string target;  // the fragment, percent-decoded
    for (std::size_t i = 1; i < ref.size(); ++i) {
      if (ref[i] == '%' && i + 2 < ref.size() && std::isxdigit(static_cast<unsigned char>(ref[i + 1])) &&
          std::isxdigit(static_cast<unsigned char>(ref[i + 2]))) {
        target += static_cast<char>(std::stoi(ref.substr(i + 1, 2), nullptr, 16));
        i += 2;
      } else {
        target += ref[i];
      }
    }
    if (!target.empty() && target[0] != '/') throw refuse(at + "/$ref", "must be a JSON pointer inside the schema (#/...)");
    return target;
  }

  // The longest chain from `at` (memoised: references may share a schema many
  // times); `depth`: the schemas applied before it in this chain.
  int chain_from(const json& root, const std::string& at, int depth) {
    const auto too_long = [&] {
      return refuse(at, "chains more than " + std::to_string(kMaxSchemaChain) +
                            " schemas applied to one value ($ref, allOf, anyOf, oneOf, not, if)");
    };
    if (const auto known = longest_.find(at); known != longest_.end()) {
      if (depth + known->second - 1 > kMaxSchemaChain) throw too_long();
      return known->second;
    }
    if (depth > kMaxSchemaChain) throw too_long();
    if (!on_path_.insert(at).second) throw refuse(at, "is reached again from itself without descending into the value (a $ref loop)");
    int longest = 1;
    const auto found = same_value_.find(at);
    if (found == same_value_.end()) {
      bool exists = false;
      try {
        exists = root.contains(json::json_pointer(at));
      } catch (const json::exception&) {
      }
      if (!exists) throw refuse(at, "is named by a $ref but is not in the schema");
    } else {
      for (const auto& next : found->second) longest = std::max(longest, 1 + chain_from(root, next, depth + 1));
    }
    on_path_.erase(at);
    longest_[at] = longest;
    return longest;
  }

  std::string field_, pointer_;
  std::map<std::string, std::vector<std::string>> same_value_;  // schema -> schemas applied to the same value
  std::set<std::string> on_path_;
  std::map<std::string, int> longest_;
};

}  // namespace

json prepare_client_schema(const json& schema, const std::string& field, const std::string& pointer) {
  Preparation preparation(field, pointer);
  if (!schema.is_object() && !schema.is_boolean()) throw preparation.refuse("", "must be a JSON Schema (an object or a boolean)");
  if (schema.dump().size() > kMaxClientSchemaBytes)
    throw preparation.refuse("", "must be at most " + std::to_string(kMaxClientSchemaBytes) + " bytes once serialized");
  json prepared = schema;
  preparation.rewrite(prepared, "");
  preparation.check_chains(prepared);
  return prepared;
}

}  // namespace ojs
