// A client's JSON Schema as the registry runs it: patterns on the bounded engine
// (JSON Schema's unanchored search, no recursion per character), 2020-12's
// keywords in their draft 7 forms, and what cannot be honoured refused by name.
#include <gtest/gtest.h>

#include "ojs/core/bounded_pattern.hpp"
#include "ojs/core/client_schema.hpp"
#include "ojs/core/error.hpp"
#include "ojs/core/json_schema.hpp"

using nlohmann::json;
using ojs::BoundedPattern;

namespace {

std::string refusal(const json& schema) {
  try {
    ojs::prepare_client_schema(schema, "schema", "/schema");
  } catch (const ojs::OjsError& e) {
    return e.details().value("field", "") + ": " + e.details().value("rule", "");
  }
  return "accepted";
}

// The field and rule of the first violation, "" when the document passes.
std::string violation(const json& schema, const json& document) {
  const auto checked = ojs::JsonSchema::of_client(ojs::prepare_client_schema(schema, "schema", "/schema"));
  try {
    checked.check(document, "args", "/args");
  } catch (const ojs::OjsError& e) {
    return e.details().value("field", "") + ": " + e.details().value("rule", "");
  }
  return "";
}

}  // namespace

TEST(BoundedPattern, SearchesAsJsonSchemaDoes) {
  EXPECT_TRUE(BoundedPattern("b").found_in("abc"));
  EXPECT_FALSE(BoundedPattern("^b").found_in("abc"));
  EXPECT_TRUE(BoundedPattern("c$").found_in("abc"));
  EXPECT_FALSE(BoundedPattern("^[A-Z]{3}$").found_in("USDX"));
  EXPECT_TRUE(BoundedPattern("^[A-Z]{3}$").found_in("USD"));
  EXPECT_TRUE(BoundedPattern("a|^z").found_in("za"));
}

TEST(BoundedPattern, LongTextsAndNestedQuantifiersStayBounded) {
  // The recursive engine overflows a 512 KiB stack within a few thousand characters
  // and takes exponential time on (a+)+$; this runs both on a megabyte.
  const std::string text(1 << 20, 'a');
  EXPECT_FALSE(BoundedPattern("^(a+)+$").found_in(text + "!"));
  EXPECT_TRUE(BoundedPattern("^(a|b|c|d)*$").found_in(text));
  EXPECT_FALSE(BoundedPattern("a*x").found_in(text));
}

TEST(BoundedPattern, RefusesWhatItCannotRunInBoundedTime) {
  EXPECT_THROW(BoundedPattern("(a)\\1"), std::invalid_argument);
  EXPECT_THROW(BoundedPattern("(?=a)a"), std::invalid_argument);
  EXPECT_THROW(BoundedPattern("((a{50}){50}){50}"), std::invalid_argument);
  EXPECT_THROW(BoundedPattern(std::string(BoundedPattern::kMaxLength + 1, 'a')), std::invalid_argument);
  EXPECT_THROW(BoundedPattern("a)(b"), std::invalid_argument);
  EXPECT_NO_THROW(BoundedPattern("[(?=]x{2,3}"));  // a class holds no look-around
}

TEST(ClientSchema, PatternsAreCheckedWithinTheBudget) {
  const json schema = {{"type", "array"}, {"items", {{"type", "string"}, {"pattern", "^[a-z]+$"}}}};
  EXPECT_EQ(violation(schema, json::array({"abc"})), "");
  EXPECT_EQ(violation(schema, json::array({"ab1"})), "args: must match the pattern ^[a-z]+$");
  ojs::PatternBudget budget(10);
  EXPECT_NE(violation(schema, json::array({std::string(100, 'a')})).find("pattern checks may take"), std::string::npos);
}

TEST(ClientSchema, PrefixItemsAndDependentRequiredAreHonoured) {
  const json tuple = {{"type", "array"}, {"prefixItems", {{{"type", "string"}}, {{"type", "integer"}}}}, {"items", false}};
  EXPECT_EQ(violation(tuple, json::array({"a", 1})), "");
  EXPECT_NE(violation(tuple, json::array({"a", "b"})), "");
  EXPECT_NE(violation(tuple, json::array({"a", 1, 2})), "");  // items: false forbids a third
  const json dependent = {{"type", "object"}, {"dependentRequired", {{"card", {"cvv"}}}}};
  EXPECT_EQ(violation(dependent, {{"cvv", 1}}), "");
  EXPECT_NE(violation(dependent, {{"card", 1}}), "");
}

TEST(ClientSchema, KeywordsItCannotHonourAreRefusedByName) {
  EXPECT_EQ(refusal({{"patternProperties", {{"^a", {{"type", "string"}}}}}}).substr(0, 24), "schema.patternProperties");
  EXPECT_EQ(refusal({{"type", "object"}, {"unevaluatedProperties", false}}).substr(0, 28), "schema.unevaluatedProperties");
  EXPECT_EQ(refusal({{"$ref", "https://example.com/s.json"}}).substr(0, 11), "schema.$ref");
  EXPECT_EQ(refusal({{"properties", {{"a", {{"pattern", "(x)\\1"}}}}}}).substr(0, 27), "schema.properties.a.pattern");
  EXPECT_EQ(refusal("a string"), "schema: must be a JSON Schema (an object or a boolean)");
  EXPECT_EQ(refusal({{"type", "object"}}), "accepted");
}

TEST(ClientSchema, ReferenceLoopsAndLongChainsAreRefused) {
  const json loop = {{"definitions", {{"a", {{"$ref", "#/definitions/b"}}}, {"b", {{"allOf", {{{"$ref", "#/definitions/a"}}}}}}}},
                     {"$ref", "#/definitions/a"}};
  EXPECT_NE(refusal(loop).find("loop"), std::string::npos) << refusal(loop);
  json chain = {{"definitions", json::object()}, {"$ref", "#/definitions/d0"}};
  for (int i = 0; i < 12; ++i) chain["definitions"]["d" + std::to_string(i)] = {{"$ref", "#/definitions/d" + std::to_string(i + 1)}};
  chain["definitions"]["d12"] = {{"type", "string"}};
  EXPECT_NE(refusal(chain).find("chains more than"), std::string::npos) << refusal(chain);
  // Recursion that descends into the value is a tree's schema, not a loop.
  const json tree = {{"type", "object"}, {"properties", {{"children", {{"type", "array"}, {"items", {{"$ref", "#"}}}}}}}};
  EXPECT_EQ(refusal(tree), "accepted");
  EXPECT_EQ(refusal({{"$ref", "#/definitions/missing"}}).find("is not in the schema") != std::string::npos, true);
  json wide = {{"definitions", json::object()}, {"$ref", "#/definitions/d0"}};  // shared schemas: checked once each
  for (int i = 0; i < 7; ++i) {
    json refs = json::array();
    for (int k = 0; k < 40; ++k) refs.push_back({{"$ref", "#/definitions/d" + std::to_string(i + 1)}});
    wide["definitions"]["d" + std::to_string(i)] = {{"anyOf", refs}};
  }
  wide["definitions"]["d7"] = {{"type", "string"}};
  EXPECT_NE(refusal(wide).find("chains more than"), std::string::npos);
}
