#include <gtest/gtest.h>

#include "ojs/core/envelope.hpp"
#include "ojs/core/error.hpp"

using namespace ojs;
using nlohmann::json;

namespace {
std::string field_of(const json& body) {
  try {
    parse_enqueue_request(body, 0);
  } catch (const OjsError& e) {
    return e.details().value("field", "?");
  }
  return "";
}
}  // namespace

TEST(Envelope, DefaultsAndFlattenedOptions) {
  auto job = parse_enqueue_request({{"type", "email.send"}, {"args", {1}}, {"x_custom", 7},
                                    {"options", {{"queue", "mail"}, {"priority", 5}, {"timeout_ms", 100}, {"tags", {"a"}}}}},
                                   1000);
  EXPECT_EQ(job.queue, "mail");
  EXPECT_EQ(job.priority, 5);
  EXPECT_EQ(job.retry.max_attempts, 3);
  EXPECT_EQ(job.document["x_custom"], 7);
  EXPECT_EQ(job.document["tags"], json({"a"}));
  EXPECT_FALSE(job.document.contains("options"));
  EXPECT_EQ(job.document["specversion"], "1.0");
  auto relative = parse_enqueue_request({{"type", "a"}, {"args", json::array()}, {"options", {{"scheduled_at", "+PT5S"}}}}, 1000);
  EXPECT_EQ(relative.scheduled_at_ms, 6000);
}

TEST(Envelope, EachRuleNamesItsField) {
  EXPECT_EQ(field_of({{"args", json::array()}}), "type");
  EXPECT_EQ(field_of({{"type", "Bad"}, {"args", json::array()}}), "type");
  EXPECT_EQ(field_of({{"type", "a"}}), "args");
  EXPECT_EQ(field_of({{"type", "a"}, {"args", "x"}}), "args");
  EXPECT_EQ(field_of({{"type", "a"}, {"args", json::array()}, {"id", "nope"}}), "id");
  EXPECT_EQ(field_of({{"type", "a"}, {"args", json::array()}, {"options", {{"queue", "-q"}}}}), "queue");
  EXPECT_EQ(field_of({{"type", "a"}, {"args", json::array()}, {"options", {{"priority", 101}}}}), "priority");
  EXPECT_EQ(field_of({{"type", "a"}, {"args", json::array()}, {"options", {{"retry", {{"initial_interval", "soon"}}}}}}), "retry.initial_interval");
  EXPECT_EQ(field_of({{"type", "a"}, {"args", json::array()}, {"options", {{"retry", {{"backoff_coefficient", 0.5}}}}}}), "retry.backoff_coefficient");
  EXPECT_EQ(field_of({{"type", "a"}, {"args", json::array()}, {"options", {{"delay_until", "tomorrow"}}}}), "delay_until");
  EXPECT_EQ(field_of({{"type", "a"}, {"args", json::array()}, {"meta", 3}}), "meta");
}

TEST(Envelope, RetryDelayBackoffAndJitter) {
  RetryPolicy p;
  p.initial_interval_ms = 1000;
  p.backoff_coefficient = 2.0;
  p.max_interval_ms = 5000;
  p.jitter = false;
  EXPECT_EQ(retry_delay_ms(p, 1, 0.0), 1000);
  EXPECT_EQ(retry_delay_ms(p, 2, 0.0), 2000);
  EXPECT_EQ(retry_delay_ms(p, 3, 0.0), 4000);
  EXPECT_EQ(retry_delay_ms(p, 4, 0.0), 5000);  // capped
  p.backoff_type = "linear";
  EXPECT_EQ(retry_delay_ms(p, 3, 0.0), 3000);
  p.backoff_type = "constant";
  EXPECT_EQ(retry_delay_ms(p, 3, 0.0), 1000);
  p.backoff_type = "exponential";
  p.jitter = true;
  EXPECT_EQ(retry_delay_ms(p, 2, 0.0), 1000);  // 0.5x
  EXPECT_EQ(retry_delay_ms(p, 2, 0.99), 2980);
}

// A job that names no retry policy stores the default's (built once); one that names
// a policy, in either spelling, stores its own.
TEST(Envelope, TheStoredRetryPolicyIsTheDefaultOrTheOneNamed) {
  const json defaults = parse_enqueue_request({{"type", "a"}, {"args", json::array()}}, 0).document["retry"];
  EXPECT_EQ(defaults, RetryPolicy{}.to_json());
  EXPECT_EQ(defaults["max_attempts"], 3);
  for (const char* spelling : {"retry", "retry_policy"}) {
    const auto job = parse_enqueue_request(
        {{"type", "a"}, {"args", json::array()}, {"options", {{spelling, {{"max_attempts", 7}, {"initial_interval", "PT2S"}}}}}}, 0);
    EXPECT_EQ(job.document["retry"]["max_attempts"], 7) << spelling;
    EXPECT_EQ(job.document["retry"]["initial_interval"], "PT2S") << spelling;
    EXPECT_EQ(job.document["max_attempts"], 7) << spelling;
  }
  EXPECT_EQ(parse_enqueue_request({{"type", "a"}, {"args", json::array()}}, 0).document["retry"], defaults) << "the same again";
}
