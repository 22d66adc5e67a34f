// Unit tests of the conformance runner's pure parts: paths, matchers, body
// assertions and patterns, templates, actions and case loading. No network.
#include "actions.hpp"
#include "case_file.hpp"
#include "json_path.hpp"
#include "matchers.hpp"
#include "templates.hpp"
#include "support/reference_dir.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using nlohmann::json;
using namespace ojs::conformance;

namespace {

bool matches(const json& actual, const json& expected, ObjectMode mode = ObjectMode::Exact) {
  return static_cast<bool>(match_value(&actual, expected, mode));
}
bool matches_absent(const json& expected) { return static_cast<bool>(match_value(nullptr, expected)); }

const char* kUuidV7 = "019461a8-1a2b-7c3d-8e4f-5a6b7c8d9e0f";

}  // namespace

// ---- paths ------------------------------------------------------------------------

TEST(JsonPath, LooksUpMembersAndIndices) {
  const json doc = json::parse(R"j({"job":{"id":"x","args":[{"order":3},[1,[2,5]]]},"a.b":{"c":1}})j");
  EXPECT_EQ(*lookup(doc, "$.job.id"), "x");
  EXPECT_EQ(*lookup(doc, "$.job.args[0].order"), 3);
  EXPECT_EQ(*lookup(doc, "$.job.args[1][1][1]"), 5);
  EXPECT_EQ(*lookup(doc, "job.id"), "x");
  EXPECT_EQ(*lookup(doc, "$['a.b'].c"), 1);
  EXPECT_EQ(*lookup(doc, "$"), doc);
  EXPECT_EQ(lookup(doc, "$.job.missing"), nullptr);
  EXPECT_EQ(lookup(doc, "$.job.args[9]"), nullptr);
  EXPECT_EQ(lookup(doc, "$.job.id.deeper"), nullptr);
  EXPECT_EQ(lookup(doc, "$.job[0]"), nullptr);
}

TEST(JsonPath, AMemberFilterAddressesTheFirstMatchingElement) {
  const json doc = json::parse(R"j({"jobs":[{"id":"a","state":"x"},{"id":"b","state":"discarded","n":2}]})j");
  EXPECT_EQ(*lookup(doc, "$.jobs[?(@.id=='b')].state"), "discarded");
  EXPECT_EQ(*lookup(doc, "$.jobs[?(@.id==\"a\")]"), doc["jobs"][0]);
  EXPECT_EQ(*lookup(doc, "$.jobs[?(@.n==2)].id"), "b");
  EXPECT_EQ(lookup(doc, "$.jobs[?(@.id=='c')]"), nullptr) << "no element: missing";
  EXPECT_EQ(lookup(doc, "$.jobs[0][?(@.id=='a')]"), nullptr) << "not an array";
  EXPECT_THROW(parse_path("$.jobs[?(id=='a')]"), std::invalid_argument);
  EXPECT_THROW(parse_path("$.jobs[?(@.id='a')]"), std::invalid_argument);
}

TEST(JsonPath, AMissingMemberIsTriedAsAKeyWithDots) {
  const json doc = json::parse(R"j({"meta":{"ojs.codec.encodings":["x"],"ojs.codec":{"key_id":"k"},"a":{"b":1}}})j");
  EXPECT_EQ(*lookup(doc, "$.meta.ojs.codec.encodings[0]"), "x");
  EXPECT_EQ(*lookup(doc, "$.meta.ojs.codec.key_id"), "k") << "the shortest key with the rest of the path";
  EXPECT_EQ(*lookup(doc, "$.meta.a.b"), 1) << "nested members first";
  EXPECT_EQ(lookup(doc, "$.meta.ojs.nothing"), nullptr);
  EXPECT_EQ(lookup(doc, "$.meta.ojs.codec.encodings[1]"), nullptr);
}

TEST(JsonPath, StepIdsWithDashesAreMembers) {
  const json doc = {{"steps", {{"step-1", {{"response", {{"body", {{"job", {{"id", "a"}}}}}}}}}}}};
  EXPECT_EQ(*lookup(doc, "steps.step-1.response.body.job.id"), "a");
}

TEST(JsonPath, RejectsMalformedPaths) {
  EXPECT_THROW(parse_path("$.a..b"), std::invalid_argument);
  EXPECT_THROW(parse_path("$.a[x]"), std::invalid_argument);
  EXPECT_THROW(parse_path("$.a[1"), std::invalid_argument);
  EXPECT_THROW(parse_path("$.a."), std::invalid_argument);
  EXPECT_TRUE(is_json_path("$.job.id"));
  EXPECT_TRUE(is_json_path("$"));
  EXPECT_FALSE(is_json_path("$or"));
  EXPECT_FALSE(is_json_path("state"));
}

// ---- literals ---------------------------------------------------------------------

TEST(Matchers, ScalarLiteralsCompareByValue) {
  EXPECT_TRUE(matches(42, 42));
  EXPECT_TRUE(matches(42.0, 42));
  EXPECT_TRUE(matches(3.14, 3.14));
  EXPECT_TRUE(matches(nullptr, nullptr));
  EXPECT_TRUE(matches("available", "available"));
  EXPECT_FALSE(matches("42", 42));
  EXPECT_FALSE(matches(true, 1));
  EXPECT_FALSE(matches(false, nullptr));
  EXPECT_FALSE(matches_absent(nullptr));  // absent is not null
}

TEST(Matchers, ArraysNeedSameLengthAndElements) {
  EXPECT_TRUE(matches(json::parse(R"j([1,"two",[3]])j"), json::parse(R"j([1,"two",[3]])j")));
  EXPECT_FALSE(matches(json::parse(R"j([1,2])j"), json::parse(R"j([1,2,3])j")));
  EXPECT_FALSE(matches(json::parse(R"j([1,3])j"), json::parse(R"j([1,2])j")));
  const auto result = match_value(nullptr, json::array());
  EXPECT_FALSE(result);
}

TEST(Matchers, ExactObjectsRejectExtraKeysPartialAccepts) {
  const json actual = {{"a", 1}, {"b", {{"c", 2}, {"d", 3}}}};
  EXPECT_TRUE(matches(actual, actual));
  EXPECT_FALSE(matches(actual, {{"a", 1}}));
  EXPECT_TRUE(matches(actual, {{"a", 1}}, ObjectMode::Partial));
  EXPECT_TRUE(matches(actual, {{"b", {{"c", 2}}}}, ObjectMode::Partial));
  EXPECT_FALSE(matches(actual, {{"b", {{"c", 3}}}}, ObjectMode::Partial));
  EXPECT_TRUE(matches(actual, {{"a", 1}, {"b", {{"c", 2}, {"d", 3}}}, {"e", "absent"}}));
}

TEST(Matchers, FailureMessagesLocateAndShowBothSides) {
  const json actual = json::parse(R"j({"args":[1,{"k":"v"}]})j");
  const auto result = match_value(&actual, json::parse(R"j({"args":[1,{"k":"w"}]})j"));
  ASSERT_FALSE(result);
  EXPECT_EQ(result.where, ".args[1].k");
  EXPECT_NE(result.why.find("expected \"w\""), std::string::npos);
  EXPECT_NE(result.why.find("got \"v\""), std::string::npos);
}

// ---- matcher strings --------------------------------------------------------------

TEST(Matchers, StringMatchers) {
  EXPECT_TRUE(matches(kUuidV7, "string:uuidv7"));
  EXPECT_FALSE(matches("550e8400-e29b-41d4-a716-446655440000", "string:uuidv7"));  // v4
  EXPECT_FALSE(matches("019461A8-1A2B-7C3D-8E4F-5A6B7C8D9E0F", "string:uuidv7"));  // upper case
  EXPECT_TRUE(matches("550e8400-e29b-41d4-a716-446655440000", "string:uuid"));
  EXPECT_TRUE(matches("2026-01-02T03:04:05Z", "string:datetime"));
  EXPECT_TRUE(matches("2026-01-02T03:04:05.123+02:00", "string:datetime"));
  EXPECT_FALSE(matches("2026-01-02 03:04:05", "string:datetime"));
  EXPECT_FALSE(matches(1700000000, "string:datetime"));
  EXPECT_TRUE(matches("x", "string:nonempty"));
  EXPECT_FALSE(matches("", "string:nonempty"));
  EXPECT_FALSE(matches(5, "string:nonempty"));
  EXPECT_FALSE(matches_absent("string:nonempty"));
  EXPECT_TRUE(matches("", "string:any"));
  EXPECT_TRUE(matches(json(nullptr), "exists"));
  EXPECT_FALSE(matches_absent("exists"));
  EXPECT_TRUE(matches("max_attempts must be >= 1", "string:contains:max_attempts"));
  EXPECT_FALSE(matches("attempts", "string:contains:max_attempts"));
  EXPECT_FALSE(matches(json::array({"max_attempts"}), "string:contains:max_attempts")) << "a string only";
  EXPECT_THROW(compile("string:contains:"), std::invalid_argument);
}

TEST(Matchers, NumberMatchers) {
  EXPECT_TRUE(matches(400, "number:range(400,422)"));
  EXPECT_TRUE(matches(422, "number:range(400,422)"));
  EXPECT_TRUE(matches(404.5, "number:range(400, 422)"));
  EXPECT_FALSE(matches(399, "number:range(400,422)"));
  EXPECT_FALSE(matches(423, "number:range(400,422)"));
  EXPECT_FALSE(matches("400", "number:range(400,422)"));
  EXPECT_TRUE(matches(-5, "number:range(-10,0)"));
  EXPECT_TRUE(matches(0.5, "number:positive"));
  const json range = json::parse(R"j({"range":{"min":1000,"max":3000}})j");
  EXPECT_TRUE(matches(1000, range));
  EXPECT_TRUE(matches(2999.5, range));
  EXPECT_FALSE(matches(3001, range));
  EXPECT_FALSE(matches("2000", range));
  EXPECT_TRUE(matches(json::parse(R"j({"range":{"min":1}})j"), json::parse(R"j({"range":{"min":1}})j"))) << "not the form: an object";
  // "~N": a timing, +/- 50 % (ojs-conformance.md).
  EXPECT_TRUE(matches(1000, "~1000"));
  EXPECT_TRUE(matches(500, "~1000"));
  EXPECT_TRUE(matches(1499.5, "~1000"));
  EXPECT_FALSE(matches(1501, "~1000"));
  EXPECT_FALSE(matches(499, "~1000"));
  EXPECT_FALSE(matches("1000", "~1000"));
  EXPECT_TRUE(matches("~x", "~x")) << "not a number after ~: a literal";
  EXPECT_FALSE(matches(0, "number:positive"));
  EXPECT_FALSE(matches("3", "number:positive"));
  EXPECT_TRUE(matches(1.5, "number:any"));
  EXPECT_TRUE(matches(2, "number:integer"));
  EXPECT_FALSE(matches(2.5, "number:integer"));
}

TEST(Matchers, ArrayAndPresenceMatchers) {
  EXPECT_TRUE(matches(json::array(), "array:length(0)"));
  EXPECT_FALSE(matches(json::array({1}), "array:length(0)"));
  EXPECT_TRUE(matches(json::array({1, 2}), "array:length(2)"));
  EXPECT_TRUE(matches(json::array({1}), "array:nonempty"));
  EXPECT_FALSE(matches(json::array(), "array:nonempty"));
  EXPECT_TRUE(matches(json::array({1}), "array:min_length:1"));
  EXPECT_FALSE(matches(json::array(), "array:min_length:1"));
  EXPECT_TRUE(matches(json::array({1, 2, 3}), "array:min_length(2)"));
  EXPECT_TRUE(matches(json::array({1}), "array:max_length(1)"));
  EXPECT_FALSE(matches(json::object(), "array:any"));
  EXPECT_TRUE(matches(json::object({{"a", 1}}), "object:nonempty"));
  EXPECT_TRUE(matches(true, "boolean:any"));
  EXPECT_TRUE(matches_absent("absent"));
  EXPECT_FALSE(matches(nullptr, "absent"));  // present, even though null
  EXPECT_TRUE(matches(nullptr, "present"));
  EXPECT_FALSE(matches_absent("present"));
}

TEST(Matchers, MalformedMatcherStringsThrow) {
  EXPECT_THROW(compile("string:uuidv9"), std::invalid_argument);
  EXPECT_THROW(compile("number:range(1)"), std::invalid_argument);
  EXPECT_THROW(compile("number:range(a,b)"), std::invalid_argument);
  EXPECT_THROW(compile("array:length(1"), std::invalid_argument);
  EXPECT_THROW(compile("array:nonempty(3)"), std::invalid_argument);
  EXPECT_NO_THROW(compile("plain text: not a matcher"));
  EXPECT_TRUE(is_matcher_string("array:min_length:1"));
  EXPECT_FALSE(is_matcher_string("email.send"));
}

// ---- operator objects -------------------------------------------------------------

TEST(Matchers, ExistsAndType) {
  EXPECT_TRUE(matches("x", {{"$exists", true}}));
  EXPECT_TRUE(matches(nullptr, {{"$exists", true}}));
  EXPECT_FALSE(matches_absent({{"$exists", true}}));
  EXPECT_TRUE(matches_absent({{"$exists", false}}));
  EXPECT_FALSE(matches(1, {{"$exists", false}}));
  EXPECT_TRUE(matches("2026-01-01T00:00:00Z", {{"$exists", true}, {"$type", "string"}}));
  EXPECT_FALSE(matches(5, {{"$exists", true}, {"$type", "string"}}));
  EXPECT_FALSE(matches_absent({{"$exists", true}, {"$type", "string"}}));
  EXPECT_TRUE(matches(5, {{"$type", "integer"}}));
  EXPECT_TRUE(matches(5.5, {{"$type", "number"}}));
  EXPECT_TRUE(matches(nullptr, {{"$type", "null"}}));
  EXPECT_TRUE(matches(json::array(), {{"$type", json::array({"object", "array"})}}));
  EXPECT_THROW(compile({{"$type", "strnig"}}), std::invalid_argument);
  EXPECT_THROW(compile({{"$exists", 1}}), std::invalid_argument);
}

TEST(Matchers, InMatchAndComparisons) {
  EXPECT_TRUE(matches("ok", {{"$in", {"ok", "healthy", "degraded"}}}));
  EXPECT_FALSE(matches("down", {{"$in", {"ok", "healthy"}}}));
  EXPECT_TRUE(matches(204, {{"$in", {200, 204}}}));
  EXPECT_FALSE(matches_absent({{"$in", {200, 204}}}));
  EXPECT_TRUE(matches("x", {{"$nin", {"y"}}}));
  EXPECT_TRUE(matches(kUuidV7, {{"$match", "^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$"}}));
  EXPECT_TRUE(matches("application/openjobspec+json; charset=utf-8", {{"$match", "application/(openjobspec\\+)?json"}}));
  EXPECT_FALSE(matches("text/html", {{"$match", "application/(openjobspec\\+)?json"}}));
  EXPECT_FALSE(matches(5, {{"$match", "5"}}));
  EXPECT_THROW(compile({{"$match", "(unclosed"}}), std::invalid_argument);
  EXPECT_TRUE(matches(5, {{"$gte", 5}, {"$lt", 6}}));
  EXPECT_FALSE(matches(6, {{"$gte", 5}, {"$lt", 6}}));
  EXPECT_TRUE(matches(7, {{"$gt", 6.5}, {"$lte", 7}}));
  EXPECT_FALSE(matches("7", {{"$gt", 6}}));
  EXPECT_TRUE(matches(3, {{"$ne", 4}}));
  EXPECT_TRUE(matches_absent({{"$ne", 4}}));
  EXPECT_FALSE(matches(4, {{"$ne", 4}}));
}

TEST(Matchers, SizeEqAndOr) {
  EXPECT_TRUE(matches(json::array(), {{"$size", 0}}));
  EXPECT_FALSE(matches(json::array({1}), {{"$size", 0}}));
  EXPECT_TRUE(matches(json::array({1, 2}), {{"$size", {{"$gte", 1}}}}));
  EXPECT_FALSE(matches(json::array(), {{"$size", {{"$gte", 1}}}}));
  EXPECT_FALSE(matches_absent({{"$size", 0}}));
  // $eq never reads its operand as a matcher: server data stays data.
  EXPECT_TRUE(matches("absent", {{"$eq", "absent"}}));
  EXPECT_FALSE(matches_absent({{"$eq", "absent"}}));
  EXPECT_TRUE(matches(json::parse(R"j({"a":[1]})j"), {{"$eq", json::parse(R"j({"a":[1]})j")}}));
  EXPECT_TRUE(matches(204, {{"$or", {200, "number:range(204,204)"}}}));
  EXPECT_FALSE(matches(500, {{"$or", {200, 204}}}));
  EXPECT_TRUE(matches(json::parse(R"j([{"id":"a"},{"id":"b"}])j"), {{"$contains", {{"id", "b"}}}}));
  EXPECT_FALSE(matches(json::parse(R"j([{"id":"a"}])j"), {{"$contains", {{"id", "b"}}}}));
}

TEST(Matchers, OperatorObjectsMustNotMixPlainKeysAndUnknownOperatorsThrow) {
  EXPECT_THROW(compile({{"$exists", true}, {"plain", 1}}), std::invalid_argument);
  EXPECT_THROW(compile({{"$regex", "x"}}), std::invalid_argument);
}

// ---- status and headers -----------------------------------------------------------

TEST(Status, NumberMatcherStringAndIn) {
  EXPECT_TRUE(check_status(201, 201));
  EXPECT_FALSE(check_status(201, 200));
  EXPECT_TRUE(check_status("number:range(400,422)", 422));
  EXPECT_FALSE(check_status("number:range(400,422)", 500));
  EXPECT_TRUE(check_status({{"$in", {200, 204}}}, 204));
  const auto result = check_status(201, 400);
  EXPECT_EQ(result.message(), "at status: expected 201, got 400");
  EXPECT_FALSE(check_status(200, 0));
  EXPECT_THROW(check_status(json::array({200}), 200), std::invalid_argument);
}

TEST(Headers, CaseInsensitiveNamesAndMediaTypes) {
  const std::map<std::string, std::string> headers = {
      {"content-type", "application/openjobspec+json; charset=utf-8"}, {"ojs-version", "1.0"}};
  EXPECT_TRUE(check_headers({{"Content-Type", "application/openjobspec+json"}}, headers));
  EXPECT_TRUE(check_headers({{"content-type", "Application/OpenJobSpec+JSON"}}, headers));
  EXPECT_FALSE(check_headers({{"Content-Type", "application/json"}}, headers));
  EXPECT_TRUE(check_headers({{"OJS-Version", "1.0"}}, headers));
  EXPECT_FALSE(check_headers({{"OJS-Version", "1.1"}}, headers));
  EXPECT_TRUE(check_headers({{"OJS-Version", " 1.0 "}}, headers));
  EXPECT_FALSE(check_headers({{"X-Missing", "1"}}, headers));
  EXPECT_TRUE(check_headers({{"X-Missing", "absent"}}, headers));
  EXPECT_TRUE(check_headers({{"Content-Type", {{"$match", "application/(openjobspec\\+)?json"}}}}, headers));
  const auto result = check_headers({{"OJS-Version", "2.0"}}, headers);
  EXPECT_NE(result.message().find("header OJS-Version"), std::string::npos);
}

// ---- body assertions (dialect A) --------------------------------------------------

TEST(BodyAssertions, PathsWithLiteralsAndMatchers) {
  const json body = json::parse(
      R"j({"job":{"id":"019461a8-1a2b-7c3d-8e4f-5a6b7c8d9e0f","state":"available","attempt":0,
          "args":["a",{"n":[1,2]}],"created_at":"2026-01-01T00:00:00Z"}})j");
  const json assertions = json::parse(R"j({
      "$.job.id": "string:uuidv7", "$.job.state": "available", "$.job.attempt": 0,
      "$.job.args": ["a", {"n": [1, 2]}], "$.job.args[1].n[1]": 2,
      "$.job.created_at": "string:datetime", "$.job.started_at": "absent",
      "$.job.error": {"$exists": false}})j");
  EXPECT_TRUE(check_body_assertions(assertions, &body, body.dump()));
  const auto result = check_body_assertions({{"$.job.state", "active"}}, &body, body.dump());
  ASSERT_FALSE(result);
  EXPECT_EQ(result.message(), R"j(at $.job.state: expected "active", got "available")j");
}

TEST(BodyAssertions, OrAndEmpty) {
  const json assertions = json::parse(R"j({"$or": [{"$.jobs": {"$size": 0}}, {"$empty": true}]})j");
  const json empty_jobs = json::parse(R"j({"jobs": []})j");
  const json one_job = json::parse(R"j({"jobs": [{"id": "x"}]})j");
  EXPECT_TRUE(check_body_assertions(assertions, &empty_jobs, empty_jobs.dump()));
  EXPECT_TRUE(check_body_assertions(assertions, nullptr, ""));
  const auto result = check_body_assertions(assertions, &one_job, one_job.dump());
  ASSERT_FALSE(result);
  EXPECT_NE(result.message().find("no $or alternative matched"), std::string::npos);
  EXPECT_FALSE(check_body_assertions({{"$empty", false}}, nullptr, "  "));
  EXPECT_TRUE(check_body_assertions({{"$empty", false}}, &one_job, one_job.dump()));
}

TEST(BodyAssertions, NonJsonBodyAndBadKeys) {
  const auto result = check_body_assertions({{"$.error.code", "string:nonempty"}}, nullptr, "<html>oops</html>");
  ASSERT_FALSE(result);
  EXPECT_NE(result.message().find("not JSON"), std::string::npos);
  EXPECT_FALSE(check_body_assertions({{"$.error.code", "string:nonempty"}}, nullptr, ""));
  EXPECT_TRUE(check_body_assertions({{"$.error", "absent"}}, nullptr, ""));
  EXPECT_THROW(check_body_assertions({{"job.id", "x"}}, nullptr, ""), std::invalid_argument);
  EXPECT_THROW(validate_body_assertions({{"$.a", "string:bogus"}}), std::invalid_argument);
  EXPECT_THROW(validate_body_assertions(json::parse(R"j({"$or": [{"$.a": "number:range(1)"}]})j")),
               std::invalid_argument);
  EXPECT_NO_THROW(validate_body_assertions(json::parse(R"j({"$or": [{"$.a": {"$size": 0}}, {"$empty": true}]})j")));
}

// ---- body patterns (dialect B) ----------------------------------------------------

TEST(BodyPattern, UnwrapsTheJobObject) {
  const json pushed = json::parse(R"j({"job":{"id":"j1","type":"ml.train","queue":"gpu","state":"available",
                                        "ext_ml_node_affinity":{"required":[{"key":"k","operator":"In","values":["A"]}]}}})j");
  EXPECT_EQ(unwrap_job(pushed, {{"state", "available"}}), &pushed.at("job"));
  EXPECT_TRUE(check_body_pattern({{"type", "ml.train"}, {"state", "available"}}, &pushed, pushed.dump()));
  EXPECT_TRUE(check_body_pattern(json::parse(R"j({"ext_ml_node_affinity":{"required":[{"key":"k","operator":"In","values":["A"]}]}})j"),
                                 &pushed, pushed.dump()));
  const auto result = check_body_pattern({{"state", "active"}}, &pushed, pushed.dump());
  ASSERT_FALSE(result);
  EXPECT_EQ(result.message(), R"j(at $.job.state: expected "active", got "available")j");
  // A pattern that names the wrapper is matched against the whole body.
  EXPECT_TRUE(check_body_pattern({{"job", {{"id", "j1"}}}}, &pushed, pushed.dump()));
}

// Pattern keys that are paths, as the federation cases write them: from the body
// root ("jobs[0]...", no unwrapping then), and into keys that hold dots or into
// an object under such a key.
TEST(BodyPattern, PatternKeysMayBePathsIntoTheBody) {
  const json fetched = json::parse(R"j({"jobs":[{"type":"t","meta":{"ojs.federation.source_region":"ap-1",
      "ojs.federation.weights":{"eu-west-1":10}}}]})j");
  EXPECT_EQ(unwrap_job(fetched, {{"jobs[0].type", "t"}}), &fetched);
  json both = fetched;  // a FETCH answer that also carries the first job as `job`
  both["job"] = fetched["jobs"][0];
  EXPECT_EQ(unwrap_job(both, {{"jobs[0].type", "t"}}), &both);
  EXPECT_EQ(unwrap_job(both, {{"type", "t"}}), &both.at("job"));
  EXPECT_TRUE(check_body_pattern({{"jobs[0].type", "t"}, {"jobs[0].meta.ojs.federation.source_region", "ap-1"}}, &fetched, fetched.dump()));
  EXPECT_FALSE(check_body_pattern({{"jobs[0].meta.ojs.federation.source_region", "eu-1"}}, &fetched, fetched.dump()));
  EXPECT_TRUE(check_body_pattern({{"meta", {{"ojs.federation.weights.eu-west-1", 10}}}}, &fetched, fetched.dump()));
  EXPECT_FALSE(check_body_pattern({{"meta", {{"ojs.federation.weights.us-east-1", 10}}}}, &fetched, fetched.dump()));
}

TEST(BodyPattern, FetchResultsUnwrapToTheFirstJobUnlessJobsIsNamed) {
  const json fetched = json::parse(R"j({"jobs":[{"id":"j1","state":"active"}]})j");
  const json none = json::parse(R"j({"jobs":[]})j");
  EXPECT_TRUE(check_body_pattern({{"state", "active"}}, &fetched, fetched.dump()));
  EXPECT_TRUE(check_body_pattern({{"jobs", "array:length(0)"}}, &none, none.dump()));
  EXPECT_FALSE(check_body_pattern({{"jobs", "array:length(0)"}}, &fetched, fetched.dump()));
  EXPECT_EQ(unwrap_job(none, {{"state", "active"}}), nullptr);
  const auto result = check_body_pattern({{"state", "active"}}, &none, none.dump());
  ASSERT_FALSE(result);
  EXPECT_NE(result.message().find("empty jobs list"), std::string::npos);
}

TEST(BodyPattern, UnwrappedBodiesAndPathStylePatterns) {
  const json acked = json::parse(R"j({"acknowledged":true,"id":"j1","state":"completed"})j");
  EXPECT_TRUE(check_body_pattern({{"state", "completed"}}, &acked, acked.dump()));
  const json error = json::parse(R"j({"error":{"code":"invalid_request","message":"bad","retryable":false}})j");
  EXPECT_TRUE(check_body_pattern({{"error", {{"code", "string:nonempty"}}}}, &error, error.dump()));
  EXPECT_TRUE(check_body_pattern({{"$.error.retryable", false}}, &error, error.dump()));
  EXPECT_FALSE(check_body_pattern({{"state", "completed"}}, nullptr, ""));
  EXPECT_THROW(validate_body_pattern({{"state", "string:what"}}), std::invalid_argument);
}

// ---- ASSERT steps -----------------------------------------------------------------

TEST(ExclusiveClaim, ExactlyOneFetchGetsTheJob) {
  const json spec = json::parse(R"j({"job_id":"j1","fetches":[[{"id":"j1"}],[]],
                                    "exactly_one_has_job":true,"exactly_one_empty":true})j");
  EXPECT_TRUE(check_exclusive_claim(spec));
  json both = spec;
  both["fetches"] = json::parse(R"j([[{"id":"j1"}],[{"id":"j1"}]])j");
  EXPECT_FALSE(check_exclusive_claim(both));
  json empty_body = spec;
  empty_body["fetches"] = json::parse(R"j([null,[{"id":"j1"}]])j");  // a 204 resolves to null
  EXPECT_TRUE(check_exclusive_claim(empty_body));
  json neither = spec;
  neither["fetches"] = json::parse(R"j([[],[]])j");
  EXPECT_FALSE(check_exclusive_claim(neither));
  EXPECT_THROW(check_exclusive_claim({{"job_id", "j1"}}), std::invalid_argument);
}

// ---- templates --------------------------------------------------------------------

TEST(Templates, WholeStringKeepsTypeEmbeddedSplicesText) {
  Scope scope;
  scope.record_response("step-1", 201, {{"location", "/x"}}, json::parse(R"j({"job":{"id":"j1","n":2}})j"));
  scope.record_response("step-2", 200, {}, json::parse(R"j({"jobs":[{"id":"j1"}]})j"));
  scope.store("job_id", "j1");
  EXPECT_EQ(resolve("{{steps.step-1.response.body.job.id}}", scope), "j1");
  EXPECT_EQ(resolve("{{steps.step-1.response.body.job.n}}", scope), 2);
  EXPECT_EQ(resolve("{{steps.step-2.response.body.jobs}}", scope), json::parse(R"j([{"id":"j1"}])j"));
  EXPECT_EQ(resolve("{{ steps.step-1.response.status }}", scope), 201);
  EXPECT_EQ(resolve("{{steps.step-1.response.headers.location}}", scope), "/x");
  EXPECT_EQ(resolve("/ojs/v1/jobs/{{steps.step-1.response.body.job.id}}", scope), "/ojs/v1/jobs/j1");
  EXPECT_EQ(resolve("n={{steps.step-1.response.body.job.n}}", scope), "n=2");
  EXPECT_EQ(resolve("$ref.job_id", scope), "j1");
  EXPECT_EQ(resolve("/ojs/v1/jobs/$ref.job_id/x", scope), "/ojs/v1/jobs/j1/x");
  EXPECT_EQ(resolve("/ojs/v1/jobs/${job_id}/checkpoint", scope), "/ojs/v1/jobs/j1/checkpoint");  // the durable cases' spelling
  EXPECT_EQ(resolve("${job_id}", scope), "j1");
  EXPECT_EQ(resolve("{{ref.job_id}}", scope), "j1");
  EXPECT_EQ(resolve("{{$ref.job_id}}", scope), "j1");
  EXPECT_EQ(resolve("{{captures.job_id}}", scope), "j1");
  EXPECT_EQ(resolve("/x/{{job_id}}/retry", scope), "/x/j1/retry") << "a capture named bare";
  EXPECT_EQ(resolve(json::parse(R"j({"job_id":"$ref.job_id","keep":[1,"a"]})j"), scope),
            json::parse(R"j({"job_id":"j1","keep":[1,"a"]})j"));
  EXPECT_EQ(resolve("no templates here", scope), "no templates here");
  // A template in a key (an assertion path) is spliced in as text.
  EXPECT_EQ(resolve(json::parse(R"j({"$.jobs[?(@.id=='{{steps.step-1.response.body.job.id}}')]":"exists"})j"), scope,
                    {Unresolved::Fail, true}),
            json::parse(R"j({"$.jobs[?(@.id=='j1')]":"exists"})j"));
}

TEST(Templates, UnresolvedAndLiteralWrapping) {
  Scope scope;
  EXPECT_THROW(resolve("{{steps.step-9.response.body.job.id}}", scope), std::runtime_error);
  EXPECT_THROW(resolve("$ref.missing", scope), std::runtime_error);
  EXPECT_EQ(resolve("{{steps.step-9.response.body.jobs}}", scope, {Unresolved::Null, false}), nullptr);
  scope.store("v", "absent");
  EXPECT_EQ(resolve("$ref.v", scope, {Unresolved::Fail, true}), json({{"$eq", "absent"}}));
  EXPECT_EQ(resolve("literal", scope, {Unresolved::Fail, true}), "literal");
}

TEST(Templates, EqualityAssertionOverTheScopeDocument) {
  Scope scope;
  scope.record_response("step-2", 200, {}, json::parse(R"j({"job":{"id":"j1","state":"available"}})j"));
  scope.record_response("step-3", 200, {}, json::parse(R"j({"job":{"id":"j1","state":"available"}})j"));
  scope.record_response("step-4", 200, {}, json::parse(R"j({"job":{"id":"j1","state":"active"}})j"));
  const json same = resolve({{"$.steps.step-2.response.body", "{{steps.step-3.response.body}}"}}, scope, {Unresolved::Fail, true});
  EXPECT_TRUE(check_body_assertions(same, &scope.document(), "{}"));
  const json differ = resolve({{"$.steps.step-3.response.body", "{{steps.step-4.response.body}}"}}, scope, {Unresolved::Fail, true});
  EXPECT_FALSE(check_body_assertions(differ, &scope.document(), "{}"));
}

// ---- actions ----------------------------------------------------------------------

TEST(Actions, TableBuildsCalls) {
  const auto* push = find_action("push");
  ASSERT_NE(push, nullptr);
  const auto call = push->build({{"type", "t"}, {"args", json::array()}});
  EXPECT_EQ(call.describe(), "POST /ojs/v1/jobs");
  EXPECT_EQ(json::parse(*call.body)["type"], "t");
  EXPECT_EQ(find_action("get")->build({{"id", "j1"}}).describe(), "GET /ojs/v1/jobs/j1");
  EXPECT_EQ(find_action("cancel")->build({{"id", "j1"}}).describe(), "DELETE /ojs/v1/jobs/j1");
  EXPECT_THROW(find_action("get")->build(json::object()), std::invalid_argument);
  const json fetch_request = {{"queues", {"gpu"}}, {"capabilities", {{"gpu", {{"count", 2}}}}}};
  const auto fetch = find_action("fetch")->build(fetch_request);
  EXPECT_EQ(fetch.describe(), "POST /ojs/v1/workers/fetch");
  EXPECT_EQ(json::parse(*fetch.body), fetch_request);
  EXPECT_EQ(find_action("heartbeat")->build({{"worker_id", "w"}}).path, "/ojs/v1/workers/heartbeat");
  // ACK and NACK read a request's `id` as the job's id, and leave a `job_id` alone.
  EXPECT_EQ(json::parse(*find_action("ack")->build({{"id", "j1"}, {"worker_id", "w"}}).body), json({{"job_id", "j1"}, {"worker_id", "w"}}));
  EXPECT_EQ(json::parse(*find_action("nack")->build({{"job_id", "j2"}, {"id", "x"}}).body), json({{"job_id", "j2"}, {"id", "x"}}));
  // A fetch answered with an empty body (204) is read as "no jobs".
  EXPECT_EQ(json::parse(find_action("fetch")->empty_body_means), json::parse(R"j({"jobs":[]})j"));
  EXPECT_TRUE(find_action("push")->empty_body_means.empty());
  const auto admin = find_action("admin")->build(
      {{"method", "PUT"}, {"path", "/ojs/v1/admin/queues/q/config"}, {"body", {{"ml_limits", json::object()}}}});
  EXPECT_EQ(admin.describe(), "PUT /ojs/v1/admin/queues/q/config");
  EXPECT_EQ(find_action("request")->build({{"path", "/ojs/v1/health"}}).method, "GET");
  EXPECT_THROW(find_action("request")->build(json::object()), std::invalid_argument);
  EXPECT_EQ(find_action("nope"), nullptr);
  EXPECT_TRUE(is_http_method("DELETE"));
  EXPECT_FALSE(is_http_method("get"));
}

TEST(Actions, DialectAStepsSendBodyOrRawBodyVerbatim) {
  const auto raw = build_http_step(json::parse(R"j({"action":"POST","path":"/ojs/v1/jobs","raw_body":"{ invalid json }",
                                                  "headers":{"Content-Type":"application/openjobspec+json"}})j"));
  EXPECT_EQ(*raw.body, "{ invalid json }");
  ASSERT_EQ(raw.headers.size(), 1u);
  EXPECT_EQ(raw.headers[0], "Content-Type: application/openjobspec+json");
  const auto get = build_http_step(json::parse(R"j({"action":"GET","path":"/ojs/v1/health"})j"));
  EXPECT_FALSE(get.body.has_value());
  EXPECT_THROW(build_http_step(json::parse(R"j({"action":"GET"})j")), std::invalid_argument);
}

// ---- case loading -----------------------------------------------------------------

TEST(CaseFile, ParsesBothDialects) {
  const json a = json::parse(R"j({"test_id":"T-1","name":"a","steps":[
      {"id":"s1","action":"POST","path":"/ojs/v1/jobs","body":{"type":"t","args":[]},
       "assertions":{"status":201,"body":{"$.job.id":"string:uuidv7"}},"captures":{"job_id":"$.job.id"}},
      {"id":"s2","action":"POST","path":"/ojs/v1/workers/fetch","parallel_with":"s3","body":{}},
      {"id":"s3","action":"POST","path":"/ojs/v1/workers/fetch","parallel_with":"s2","body":{},"delay_ms":5},
      {"id":"s4","action":"WAIT","duration_ms":10},
      {"id":"s5","action":"ASSERT","assertions":{"equality":{"$.steps.s2.response.status":200}}}]})j");
  const Case ca = parse_case(a, "a.json");
  ASSERT_EQ(ca.steps.size(), 5u);
  EXPECT_EQ(ca.steps[0].kind, StepKind::Http);
  EXPECT_EQ(ca.steps[0].def, nullptr);
  EXPECT_EQ(ca.steps[2].delay_ms, 5);
  EXPECT_EQ(ca.steps[3].kind, StepKind::Wait);
  EXPECT_EQ(ca.steps[3].wait_ms, 10);
  EXPECT_EQ(ca.steps[4].kind, StepKind::Assert);

  const json b = json::parse(R"j({"name":"b","steps":[
      {"action":"push","request":{"type":"t","args":[]},"expect":{"status":201,"body":{"state":"available"}},
       "store":{"job_id":"id"}},
      {"action":"wait","request":{"ms":50}},
      {"action":"fetch","request":{"queues":["q"],"capabilities":{"gpu":{"count":1}}},
       "expect":{"status":200,"body":{"jobs":"array:length(0)"}}},
      {"action":"get","request":{"id":"$ref.job_id"},"expect":{"status":200}}]})j");
  const Case cb = parse_case(b, "dir/b.json");
  EXPECT_EQ(cb.test_id, "b");  // from the file name when test_id is absent
  EXPECT_EQ(cb.steps[0].id, "step-1");
  ASSERT_NE(cb.steps[0].def, nullptr);
  EXPECT_EQ(cb.steps[0].def->name, "push");
  EXPECT_EQ(cb.steps[1].wait_ms, 50);
  EXPECT_EQ(cb.steps[3].id, "step-4");

  // The extension cases' spellings: status_in / status_one_of, capture.
  const json x = json::parse(R"j({"steps":[
      {"action":"GET","path":"/","assertions":{"status_in":[200,503]},"capture":{"id":"$.id"}},
      {"action":"GET","path":"/","assertions":{"status_one_of":[403,404]}}]})j");
  const Case cx = parse_case(x, "x.json");
  EXPECT_EQ(cx.steps[0].expect, json::parse(R"j({"status":{"$in":[200,503]}})j"));
  EXPECT_EQ(cx.steps[1].expect, json::parse(R"j({"status":{"$in":[403,404]}})j"));
  EXPECT_TRUE(static_cast<bool>(check_status(cx.steps[0].expect.at("status"), 503)));
  EXPECT_FALSE(static_cast<bool>(check_status(cx.steps[1].expect.at("status"), 200)));
}

TEST(CaseFile, RejectsBrokenCases) {
  const auto bad = [](const char* text) { return parse_case(json::parse(text), "x.json"); };
  EXPECT_THROW(bad(R"j({"steps":[]})j"), std::invalid_argument);
  EXPECT_THROW(bad(R"j({"steps":[{"action":"teleport"}]})j"), std::invalid_argument);
  EXPECT_THROW(bad(R"j({"steps":[{"action":"GET"}]})j"), std::invalid_argument);
  EXPECT_THROW(bad(R"j({"steps":[{"action":"get","request":{}}]})j"), std::invalid_argument);
  EXPECT_THROW(bad(R"j({"steps":[{"id":"a","action":"GET","path":"/","parallel_with":"zz"}]})j"), std::invalid_argument);
  EXPECT_THROW(bad(R"j({"steps":[{"id":"a","action":"GET","path":"/"},{"id":"a","action":"GET","path":"/"}]})j"),
               std::invalid_argument);
  EXPECT_THROW(bad(R"j({"steps":[{"action":"GET","path":"/","assertions":{"status":"number:range(1)"}}]})j"),
               std::invalid_argument);
  EXPECT_THROW(bad(R"j({"steps":[{"action":"WAIT"}]})j"), std::invalid_argument);
  EXPECT_THROW(bad(R"j({"steps":[{"action":"ASSERT","assertions":{}}]})j"), std::invalid_argument);
  EXPECT_FALSE(looks_like_case(json::parse(R"j({"type":"a job, not a case"})j")));
}

TEST(CaseFile, EveryPublicCaseLoads) {
  // Absent (a plain clone): skipped with the reason (ctest conformance_cases_load).
  if (const auto why = ojs::test::conformance_cases_absent(); !why.empty()) GTEST_SKIP() << why;
  const std::filesystem::path root = ojs::test::conformance_reference_dir();
  ASSERT_TRUE(std::filesystem::exists(root)) << root << " not present";
  std::size_t loaded = 0;
  for (const auto& file : discover_json_files(root)) {
    std::ifstream in(file);
    const json doc = json::parse(in);
    ASSERT_TRUE(looks_like_case(doc)) << file;
    EXPECT_NO_THROW(parse_case(doc, file.string())) << file;
    ++loaded;
  }
  EXPECT_GE(loaded, 97u);  // level 0, ext-ml, level 2 and level 3 at least (every suite: 200 and more)
}

// The level-2 cases: `[*]` paths, one_of, contains / not_contains, and two spellings.
TEST(Matchers, Level2Spellings) {
  EXPECT_TRUE(static_cast<bool>(check_status("one_of:400,422", 422)));
  EXPECT_FALSE(static_cast<bool>(check_status("one_of:400,422", 201)));
  EXPECT_TRUE(matches("x", "string:non_empty"));
  EXPECT_FALSE(matches("", "string:non_empty"));
  EXPECT_TRUE(matches(json::array({1, 2}), "array:min:2"));
  EXPECT_FALSE(matches(json::array({1}), "array:min:2"));
  const json body = {{"crons", {{{"name", "alpha"}}, {{"name", "beta"}}, {{"other", 1}}}}};
  EXPECT_TRUE(static_cast<bool>(check_body_assertions({{"$.crons[*].name", "contains:beta"}}, &body, body.dump())));
  EXPECT_FALSE(static_cast<bool>(check_body_assertions({{"$.crons[*].name", "contains:gamma"}}, &body, body.dump())));
  EXPECT_TRUE(static_cast<bool>(check_body_assertions({{"$.crons[*].name", "not_contains:gamma"}}, &body, body.dump())));
  EXPECT_FALSE(static_cast<bool>(check_body_assertions({{"$.crons[*].name", "not_contains:alpha"}}, &body, body.dump())));
  EXPECT_TRUE(static_cast<bool>(check_body_assertions({{"$.crons[*].name", json::array({"alpha", "beta"})}}, &body, body.dump())));
  EXPECT_EQ(lookup(body, "$.crons[*].name"), nullptr);  // many values: only select() sees them
}
