// ObjectText assembles a reply from members serialized once; it must write exactly
// the bytes json_text writes for the same object, or clients would see a change.
#include <gtest/gtest.h>

#include "broker/api/json_io.hpp"

namespace ojs::broker {
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

TEST(ObjectText, APutReplacesAMember) {
  ObjectText text(json{{"a", 1}, {"b", 2}});
  text.put_json("a", "one");
  EXPECT_EQ(text.str(), R"({"a":"one","b":2})");
}

}  // namespace
}  // namespace ojs::broker
