// ext_ml_gang: parsing, validation errors naming the field and rule, the class.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>

#include "ojs/core/error.hpp"
#include "ojs/core/json_schema.hpp"
#include "ojs/ml/requirement_class.hpp"
#include "ojs/ml/requirements.hpp"

using nlohmann::json;
using namespace ojs::ml;

namespace {

// {field, message} of the 400 error, or {"", ""} when parsing succeeded.
std::pair<std::string, std::string> rejection(const json& job) {
  try {
    parse_requirements(job);
  } catch (const ojs::OjsError& e) {
    EXPECT_EQ(e.code(), ojs::ErrorCode::invalid_request);
    return {e.details().at("field").get<std::string>(), e.what()};
  }
  return {"", ""};
}

json gang_job(json gang) { return {{"type", "train"}, {"ext_ml_gpu_count", 4}, {"ext_ml_gang", std::move(gang)}}; }

}  // namespace

TEST(MlGang, ParsesSizeLabelAndTimeout) {
  auto r = parse_requirements(gang_job({{"size", 2}, {"same_label", "rack"}, {"timeout_seconds", 30}}));
  EXPECT_EQ(r.hard.gang.size, 2);
  EXPECT_EQ(r.hard.gang.same_label, "rack");
  EXPECT_EQ(r.scheduling.gang_timeout_s, 30);
  EXPECT_EQ(r.gpu_count(), 4);  // per member
  EXPECT_TRUE(r.has_hard_constraints());

  r = parse_requirements(gang_job({{"size", 3}, {"same_nvlink_domain", true}}));
  EXPECT_EQ(r.hard.gang.same_label, kNvlinkDomainLabel);
  EXPECT_EQ(r.scheduling.gang_timeout_s, 60);  // default
}

TEST(MlGang, RejectsBadFieldsNamingFieldAndRule) {
  EXPECT_EQ(rejection(gang_job(4)).first, "ext_ml_gang");
  EXPECT_EQ(rejection(gang_job(json::object())).first, "ext_ml_gang.size");
  auto [field, message] = rejection(gang_job({{"size", 1}}));
  EXPECT_EQ(field, "ext_ml_gang.size");
  EXPECT_NE(message.find("between 2 and 64"), std::string::npos) << message;
  EXPECT_EQ(rejection(gang_job({{"size", kMaxGangSize + 1}})).first, "ext_ml_gang.size");
  EXPECT_EQ(rejection(gang_job({{"size", 2.5}})).first, "ext_ml_gang.size");
  EXPECT_EQ(rejection(gang_job({{"size", 2}, {"ranks", 2}})).first, "ext_ml_gang.ranks");
  EXPECT_EQ(rejection(gang_job({{"size", 2}, {"same_label", ""}})).first, "ext_ml_gang.same_label");
  EXPECT_EQ(rejection(gang_job({{"size", 2}, {"timeout_seconds", 0}})).first, "ext_ml_gang.timeout_seconds");
  EXPECT_EQ(rejection(gang_job({{"size", 2}, {"same_label", "rack"}, {"same_nvlink_domain", true}})).first,
            "ext_ml_gang.same_nvlink_domain");
  auto reserved = gang_job({{"size", 2}});
  reserved["ext_ml_reservation_id"] = "res-1";
  std::tie(field, message) = rejection(reserved);
  EXPECT_EQ(field, "ext_ml_gang");
  EXPECT_NE(message.find("ext_ml_reservation_id"), std::string::npos) << message;
}

TEST(MlGang, AGangIsItsOwnClassAndRoundTrips) {
  const auto plain = parse_requirements({{"ext_ml_gpu_count", 4}});
  const auto gang = parse_requirements(gang_job({{"size", 2}, {"same_label", "rack"}, {"timeout_seconds", 10}}));
  EXPECT_NE(class_id(plain), class_id(gang));
  // The timeout is scheduling, not a constraint: same class.
  EXPECT_EQ(class_id(gang), class_id(parse_requirements(gang_job({{"size", 2}, {"same_label", "rack"}}))));
  const auto back = requirements_from_class_json(class_json(gang));
  EXPECT_EQ(back.hard.gang, gang.hard.gang);
  EXPECT_EQ(back.gpu_count(), 4);
}

TEST(MlGang, ElasticSizesParseAndSizeMeansMinEqualsMax) {
  auto r = parse_requirements(gang_job({{"min_size", 2}, {"max_size", 8}}));
  EXPECT_EQ(r.hard.gang.size, 2);
  EXPECT_EQ(r.hard.gang.max_size, 8);
  EXPECT_TRUE(r.hard.gang.elastic());
  r = parse_requirements(gang_job({{"min_size", 1}, {"max_size", 2}}));
  EXPECT_EQ(r.hard.gang.size, 1);
  r = parse_requirements(gang_job({{"min_size", 4}, {"max_size", 4}}));
  EXPECT_FALSE(r.hard.gang.elastic());
  r = parse_requirements(gang_job({{"size", 3}}));
  EXPECT_EQ(r.hard.gang.size, 3);
  EXPECT_EQ(r.hard.gang.max_size, 3);
  EXPECT_FALSE(r.hard.gang.elastic());
}

TEST(MlGang, ElasticSizesAreRefusedNamingFieldAndRule) {
  auto [field, message] = rejection(gang_job({{"min_size", 4}, {"max_size", 2}}));
  EXPECT_EQ(field, "ext_ml_gang.max_size");
  EXPECT_NE(message.find("at least min_size (4)"), std::string::npos) << message;
  std::tie(field, message) = rejection(gang_job({{"min_size", 0}, {"max_size", 2}}));
  EXPECT_EQ(field, "ext_ml_gang.min_size");
  EXPECT_NE(message.find("between 1 and 64"), std::string::npos) << message;
  std::tie(field, message) = rejection(gang_job({{"min_size", 1}, {"max_size", 1}}));
  EXPECT_EQ(field, "ext_ml_gang.max_size");
  EXPECT_NE(message.find("between 2 and 64"), std::string::npos) << message;
  EXPECT_EQ(rejection(gang_job({{"min_size", 2}, {"max_size", kMaxGangSize + 1}})).first, "ext_ml_gang.max_size");
  std::tie(field, message) = rejection(gang_job({{"min_size", 2}}));
  EXPECT_EQ(field, "ext_ml_gang.max_size");
  EXPECT_NE(message.find("required with min_size"), std::string::npos) << message;
  EXPECT_EQ(rejection(gang_job({{"max_size", 4}})).first, "ext_ml_gang.min_size");
  std::tie(field, message) = rejection(gang_job({{"size", 2}, {"min_size", 2}, {"max_size", 4}}));
  EXPECT_EQ(field, "ext_ml_gang.min_size");
  EXPECT_NE(message.find("cannot be combined with ext_ml_gang.size"), std::string::npos) << message;
}

TEST(MlGang, AFixedGangKeepsItsClassAndAnElasticOneIsItsOwn) {
  const auto fixed = parse_requirements(gang_job({{"size", 2}}));
  EXPECT_NE(class_json(fixed).dump().find(R"("ext_ml_gang":{"size":2})"), std::string::npos) << class_json(fixed).dump();
  const auto elastic = parse_requirements(gang_job({{"min_size", 2}, {"max_size", 8}}));
  EXPECT_NE(class_id(fixed), class_id(elastic));
  EXPECT_EQ(class_id(fixed), class_id(parse_requirements(gang_job({{"min_size", 2}, {"max_size", 2}}))));
  const auto back = requirements_from_class_json(class_json(elastic));
  EXPECT_EQ(back.hard.gang, elastic.hard.gang);
}

// The published schema (schema/ext-ml-gang.schema.json) accepts what PUSH accepts,
// but for the one rule it cannot state (max_size >= min_size).
TEST(MlGang, ThePublishedSchemaAgreesWithTheParser) {
  std::ifstream in(std::string(OJS_SOURCE_DIR) + "/schema/ext-ml-gang.schema.json");
  const ojs::JsonSchema schema(json::parse(in));
  const auto schema_accepts = [&](const json& gang) {
    try {
      schema.check(gang);
      return true;
    } catch (const ojs::OjsError&) {
      return false;
    }
  };
  const std::vector<json> cases = {
      {{"size", 2}}, {{"size", 64}}, {{"size", 1}}, {{"size", 65}}, {{"size", 2.5}}, json::object(),
      {{"min_size", 1}, {"max_size", 2}}, {{"min_size", 2}, {"max_size", 8}}, {{"min_size", 0}, {"max_size", 8}},
      {{"min_size", 2}, {"max_size", 65}}, {{"min_size", 1}, {"max_size", 1}}, {{"min_size", 2}}, {{"max_size", 4}},
      {{"size", 2}, {"min_size", 2}}, {{"size", 2}, {"max_size", 4}}, {{"size", 2}, {"ranks", 2}},
      {{"size", 2}, {"same_label", "rack"}}, {{"size", 2}, {"same_label", ""}},
      {{"size", 2}, {"same_label", "rack"}, {"same_nvlink_domain", true}},
      {{"size", 2}, {"same_label", "rack"}, {"same_nvlink_domain", false}},
      {{"min_size", 2}, {"max_size", 4}, {"timeout_seconds", 3600}}, {{"min_size", 2}, {"max_size", 4}, {"timeout_seconds", 0}}};
  for (const auto& gang : cases)
    EXPECT_EQ(schema_accepts(gang), rejection(gang_job(gang)).first.empty()) << gang.dump();
  // The rule beyond it: the schema takes min above max, PUSH refuses it.
  EXPECT_TRUE(schema_accepts({{"min_size", 4}, {"max_size", 2}}));
  EXPECT_EQ(rejection(gang_job({{"min_size", 4}, {"max_size", 2}})).first, "ext_ml_gang.max_size");
}
