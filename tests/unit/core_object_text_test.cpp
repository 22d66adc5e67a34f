// ObjectText assembles a reply from members serialized once; it must write exactly
// the bytes json_text writes for the same object, or clients would see a change.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ojs/core/object_text.hpp"

namespace ojs {
namespace {

using nlohmann::json;

json awkward_job() {
  json job = {{"id", "019a0000-0000-7000-8000-000000000001"},
              {"args", json::array({1, "two", 3.5, nullptr, json::object(), json::array()})},
              {"meta", {{"labels", {{"z", "1"}, {"a", "quote \" and \\ and \n"}}}, {"tenant_id", "t\u00e9"}}},
              {"Zeta", true},
              {"job_x", -12345678901234LL},
              {"", "empty key"},
              {"\u00fcber", "non-ASCII key"},
              {"we\"ird,key}", {{"x", "a,b}c]"}, {"y", json::array({"[", "{"})}}},
              {"tab\tkey", "control character in a key"}};
  job["bad"] = std::string("invalid \xff\xfe utf-8");  // replaced, as json_reply replaces it
  return job;
}

TEST(ObjectText, AnObjectFromItsMembersIsWhatTheSerializerWrites) {
  const json job = awkward_job();
  EXPECT_EQ(ObjectText(job).str(), json_text(job));
  EXPECT_EQ(ObjectText(json::object()).str(), "{}");
  EXPECT_EQ(ObjectText().str(), json_text(json::object()));
}

TEST(ObjectText, AddedMembersTakeTheirPlaceInKeyOrder) {
  json job = awkward_job();
  ObjectText text(job);
  text.put("job", text.str());
  text.put_json("job_id", job["id"]);
  text.put_json("acknowledged", true);
  json expected = job;
  expected["job"] = job;
  expected["job_id"] = job["id"];
  expected["acknowledged"] = true;
  EXPECT_EQ(text.str(), json_text(expected));
}

TEST(ObjectText, AddedKeysAreEscapedAsTheSerializerEscapesThem) {
  ObjectText text;
  text.put_json("we\"ird\\", 1);
  text.put_json("new\nline", 2);
  EXPECT_EQ(text.str(), json_text(json{{"we\"ird\\", 1}, {"new\nline", 2}}));
}

TEST(ObjectText, AStoredDocumentSplitsIntoTheMembersTheSerializerWrote) {
  const json job = awkward_job();
  const auto split = ObjectText::from_text(json_text(job));
  ASSERT_TRUE(split.has_value());
  EXPECT_EQ(split->str(), json_text(job));
  EXPECT_EQ(split->value_text("we\"ird,key}"), json_text(job["we\"ird,key}"]));
  EXPECT_EQ(split->value_text("args"), json_text(job["args"]));
  EXPECT_TRUE(split->has("\u00fcber"));
  EXPECT_EQ(split->value_text("absent"), "");
  ASSERT_TRUE(ObjectText::from_text("{}").has_value());
  EXPECT_EQ(ObjectText::from_text("{}")->str(), "{}");
}

TEST(ObjectText, TextTheSerializerWouldNotWriteIsNotSplit) {
  for (const char* text : {"", "[]", "{", "{\"a\":1", "{\"a\":1}x", "{ \"a\":1}", "{\"b\":1,\"a\":2}",
                           "{\"a\":1,\"a\":2}", "{\"a\":}", "{\"a\"1}", "{\"a\":[1,2}", "{\"a\":\"x}", "{a:1}",
                           "{\"a\":1,}", "\"str\""})
    EXPECT_FALSE(ObjectText::from_text(text).has_value()) << text;
}

TEST(ObjectText, StringsAndIntegersAreWrittenAsTheSerializerWritesThem) {
  ObjectText text;
  const std::string odd = std::string("tab\t quote\" slash\\ caf\u00e9 bad \xff end");
  text.put_string("plain", "worker-1");
  text.put_string("odd", odd);
  text.put_int("big", -9007199254740993LL);
  text.put_int("zero", 0);
  EXPECT_EQ(text.str(), json_text(json{{"plain", "worker-1"}, {"odd", odd}, {"big", -9007199254740993LL}, {"zero", 0}}));
}

TEST(ObjectText, APutReplacesAMember) {
  ObjectText text(json{{"a", 1}, {"b", 2}});
  text.put_json("a", "one");
  EXPECT_EQ(text.str(), R"({"a":"one","b":2})");
}

// The members are slices of one buffer that grows as members are put: a stored document
// split once, then a reply's many puts (replacing, inserting before and after, escaped
// keys) must still read back whole.
TEST(ObjectText, MembersStayWholeAsTheBufferGrows) {
  json expected = awkward_job();
  auto text = ObjectText::from_text(json_text(expected));
  ASSERT_TRUE(text.has_value());
  for (int i = 0; i < 200; ++i) {
    const std::string key = (i % 3 == 0 ? "\u00fc" : i % 3 == 1 ? "a" : "we\"") + std::to_string(i);
    const std::string value(static_cast<std::size_t>(i * 7 % 97), static_cast<char>('a' + i % 26));
    text->put_string(key, value);
    expected[key] = value;
    if (i % 10 == 0) {
      text->put_json("args", i);  // a replaced member of the stored document
      expected["args"] = i;
    }
  }
  EXPECT_EQ(text->str(), json_text(expected));
  EXPECT_EQ(text->value_text("we\"ird,key}"), json_text(expected["we\"ird,key}"]));
  EXPECT_EQ(text->value_text("we\"5"), json_text(expected["we\"5"]));
  EXPECT_EQ(text->value_text("args"), "190");
}

}  // namespace
}  // namespace ojs
