// A job in a Lua reply is field/value pairs: a later pair overrides an earlier one
// and a nil value deletes the field (_lib.lua job_reply extends the hash it read).
#include <gtest/gtest.h>

#include <cstdint>

#include <nlohmann/json.hpp>

#include "broker/store/job_record.hpp"
#include "ojs/core/envelope.hpp"
#include "ojs/core/time.hpp"

using ojs::broker::JobRecord;
using ojs::broker::RedisValue;

namespace {

RedisValue text(const std::string& s) {
  RedisValue v;
  v.type = RedisValue::Type::string;
  v.str = s;
  return v;
}

}  // namespace

TEST(JobRecord, LaterPairsOverrideAndNilDeletes) {
  RedisValue reply;
  reply.type = RedisValue::Type::array;
  for (const char* s : {"id", "j1", "state", "available", "error", "{\"code\":\"x\"}", "attempt", "1"}) reply.elements.push_back(text(s));
  for (const char* s : {"state", "completed", "attempt", "2"}) reply.elements.push_back(text(s));
  reply.elements.push_back(text("error"));
  reply.elements.push_back(RedisValue{});  // nil: deleted
  const auto job = JobRecord::from_flat_array(reply);
  EXPECT_EQ(job.state(), "completed");
  EXPECT_EQ(job.attempt(), 2);
  EXPECT_FALSE(job.has("error"));
  EXPECT_EQ(job.id(), "j1");
}

// Integer fields read as the scripts write them; a field whose text is not an
// integer (a damaged hash, an overflow) reads as absent, never as an exception.
TEST(JobRecord, IntegerFieldsReadTheirLeadingIntegerOrNothing) {
  JobRecord job;
  job.fields = {{"attempt", "3"}, {"neg", "-42"}, {"big", "9223372036854775807"}, {"over", "9223372036854775808"},
                {"frac", "12.5"}, {"word", "many"}, {"empty", ""}};
  EXPECT_EQ(job.get_int("attempt"), 3);
  EXPECT_EQ(job.get_int("neg"), -42);
  EXPECT_EQ(job.get_int("big"), INT64_MAX);
  EXPECT_EQ(job.get_int("over"), std::nullopt);
  EXPECT_EQ(job.get_int("frac"), 12);  // the leading integer, as std::stoll read it
  EXPECT_EQ(job.get_int("word"), std::nullopt);
  EXPECT_EQ(job.get_int("empty"), std::nullopt);
  EXPECT_EQ(job.get_int("absent"), std::nullopt);
  const std::string long_name = "a_field_name_longer_than_the_short_string_buffer";
  job.fields[long_name] = "7";
  EXPECT_EQ(job.get_int(std::string_view(long_name)), 7);
  EXPECT_TRUE(job.has(long_name.c_str()));
}

// What a held job weighs on a worker (the held sets are verified with it): the
// holder's GPUs and devices, a gang member's own share, nothing for anyone else.
TEST(JobRecord, LoadOnCountsTheHolderAndEachGangMemberOwnShare) {
  JobRecord job;
  job.fields = {{"id", "j1"}, {"state", "active"}, {"worker_id", "w1"}, {"gpus", "2"}, {"charged_gpus", "2"},
                {"ext_ml_assigned_devices", "[0,1]"}, {"doc", R"({"type":"train","ext_ml_model_id":"llama"})"}};
  const auto load = job.load_on("w1");
  ASSERT_TRUE(load);
  EXPECT_EQ(load->gpus, 2);
  EXPECT_EQ(load->devices, (std::vector<int>{0, 1}));
  EXPECT_EQ(load->labels.at("model_id"), "llama");
  EXPECT_EQ(load->labels.at("job_id"), "j1");
  EXPECT_FALSE(job.load_on("w2")) << "another worker holds it";
  job.fields["state"] = "completed";
  EXPECT_FALSE(job.load_on("w1")) << "it ended";

  JobRecord gang;
  gang.fields = {{"id", "g1"}, {"state", "available"}, {"gang_workers", R"(["w1","w2"])"},
                 {"gang_members", R"([{"worker_id":"w1","gpus":4,"devices":"[0,1,2,3]"},{"worker_id":"w2","gpus":4,"devices":""}])"}};
  const auto member = gang.load_on("w2");
  ASSERT_TRUE(member) << "a forming gang's member holds its share";
  EXPECT_EQ(member->gpus, 4);
  EXPECT_TRUE(member->devices.empty());
  EXPECT_EQ(gang.load_on("w1")->devices, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_FALSE(gang.load_on("w3"));
}

// The envelope is the stored document with the hash's system fields over it. It is
// assembled as text (the document is not parsed): each overlay rule below, checked
// on the parsed result, and the text is valid JSON whatever the fields hold.
TEST(JobRecord, TheEnvelopeOverlaysTheHashOnTheStoredDocument) {
  JobRecord job;
  const nlohmann::json doc = {{"type", "train"}, {"args", {1, "a,b}"}}, {"id", "stale"}, {"state", "stale"},
                              {"scheduled_at", "2026-01-02T03:04:05.000+01:00"}, {"created_at", "1999-01-01T00:00:00Z"},
                              {"usage", {{"note", "the producer's"}}}};
  job.fields = {{"doc", doc.dump()},  // as PushService stores it
                {"id", "j1"}, {"state", "active"}, {"attempt", "2"},
                {"scheduled_at", std::to_string(*ojs::parse_rfc3339("2026-01-02T02:04:05Z"))},  // the same instant
                {"created_at", "1767225600000"},
                {"result", R"({"b":1,"a":[true]})"}, {"error", "not json {"}, {"worker_id", "w1"},
                {"preemption_count", "3"}, {"usage_gpu_us", "5000000"}};
  const std::string text = job.envelope_text().str();
  const auto env = nlohmann::json::parse(text);  // valid JSON
  EXPECT_EQ(env["id"], "j1");
  EXPECT_EQ(env["state"], "active");
  EXPECT_EQ(env["attempt"], 2);
  EXPECT_EQ(env["type"], "train");
  EXPECT_EQ(env["args"], doc["args"]);
  EXPECT_EQ(env["scheduled_at"], "2026-01-02T03:04:05.000+01:00") << "as the producer sent it: the same instant";
  EXPECT_EQ(env["created_at"], ojs::format_rfc3339(1767225600000)) << "the hash's instant, not the document's";
  EXPECT_EQ(env["result"], (nlohmann::json{{"a", {true}}, {"b", 1}}));
  EXPECT_EQ(env["error"], "not json {") << "a damaged field is its text, never invalid JSON";
  EXPECT_EQ(env["worker_id"], "w1");
  EXPECT_EQ(env["preemption_count"], 3);
  EXPECT_EQ(env["usage"], (nlohmann::json{{"note", "the producer's"}, {"gpu_us", 5000000}}));
  EXPECT_EQ(text, env.dump()) << "the text is what the serializer writes for it";
  EXPECT_EQ(job.envelope(), env);
}

TEST(JobRecord, ADocumentNotInTheSerializersFormIsStillRead) {
  JobRecord job;
  job.fields = {{"doc", R"({ "type" : "x", "args" : [1, 2] })"}, {"id", "j2"}, {"state", "available"}};
  auto envelope = nlohmann::json::parse(job.envelope_text().str());
  // What a stored document may leave out comes back (stored_document).
  EXPECT_EQ(envelope["specversion"], "1.0");
  EXPECT_EQ(envelope["meta"], nlohmann::json::object());
  EXPECT_EQ(envelope["retry"], ojs::RetryPolicy{}.to_json());
  for (const char* restored : {"specversion", "meta", "retry"}) envelope.erase(restored);
  EXPECT_EQ(envelope, (nlohmann::json{{"type", "x"}, {"args", {1, 2}}, {"id", "j2"}, {"state", "available"}, {"attempt", 0}}));
  job.fields["doc"] = "[not an object]";
  envelope = nlohmann::json::parse(job.envelope_text().str());
  EXPECT_EQ(envelope["id"], "j2");
  EXPECT_EQ(envelope["state"], "available");
  EXPECT_FALSE(envelope.contains("args"));
  EXPECT_TRUE(job.document().is_null()) << "an unreadable document reads as none";
}

// The job is stored once: the stored document leaves out what the fields hold and
// what every job shares unless it says otherwise, and the envelope and document()
// give back exactly what was pushed.
TEST(JobRecord, AStoredDocumentComesBackWhole) {
  const nlohmann::json pushed = {{"id", "j3"},        {"type", "train"}, {"queue", "q"},         {"args", {1}},
                                 {"specversion", "1.0"}, {"meta", nlohmann::json::object()}, {"priority", 4},
                                 {"max_attempts", 3},  {"retry", ojs::RetryPolicy{}.to_json()}};
  const auto stored = nlohmann::json::parse(JobRecord::stored_document(pushed));
  EXPECT_EQ(stored, (nlohmann::json{{"args", {1}}, {"priority", 4}, {"max_attempts", 3}}));
  JobRecord job;
  job.fields = {{"doc", stored.dump()}, {"id", "j3"}, {"queue", "q"}, {"type", "train"}, {"state", "available"}};
  EXPECT_EQ(job.document(), pushed);
  auto envelope = nlohmann::json::parse(job.envelope_text().str());
  for (const char* system : {"state", "attempt"}) envelope.erase(system);
  EXPECT_EQ(envelope, pushed);
  EXPECT_EQ(job.priority(), 4);

  // What differs from the shared values stays in the document.
  nlohmann::json own = pushed;
  own["meta"] = {{"owner", "ana"}};
  own["retry"]["max_attempts"] = 9;
  own["specversion"] = "1.1";
  const auto kept = nlohmann::json::parse(JobRecord::stored_document(own));
  EXPECT_EQ(kept["meta"]["owner"], "ana");
  EXPECT_EQ(kept["retry"]["max_attempts"], 9);
  EXPECT_EQ(kept["specversion"], "1.1");
}

// A job stored before the document was stored once holds priority and gpus as
// fields too: they are read first.
TEST(JobRecord, FieldsOfAJobStoredBeforeAreReadFirst) {
  JobRecord job;
  job.fields = {{"doc", R"({"priority":1,"ext_ml_gpu_count":4})"}, {"id", "j4"}};
  EXPECT_EQ(job.priority(), 1);
  EXPECT_EQ(job.gpu_count(), 4);
  job.fields["priority"] = "7";
  job.fields["gpus"] = "2";
  EXPECT_EQ(job.priority(), 7);
  EXPECT_EQ(job.gpu_count(), 2);
}
