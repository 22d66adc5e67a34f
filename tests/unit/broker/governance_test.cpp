// Pure parts of queue governance and access control: config validation, limits,
// defaults, tenant resolution, token hashing, role policy, rate limiter.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>

#include "broker/auth/rate_limiter.hpp"
#include "broker/auth/roles.hpp"
#include "broker/auth/token_file.hpp"
#include "broker/auth/token_hash.hpp"
#include "broker/governance/admission.hpp"
#include "broker/governance/defaults.hpp"
#include "broker/governance/limits.hpp"
#include "broker/governance/queue_config.hpp"
#include "ojs/core/error.hpp"
#include "ojs/ml/requirements.hpp"

using nlohmann::json;
using namespace ojs::broker;

namespace {
// The details of the OjsError `f` throws (null when it throws nothing).
template <class F>
json error_details(F f, ojs::ErrorCode* code = nullptr) {
  try {
    f();
  } catch (const ojs::OjsError& e) {
    if (code) *code = e.code();
    return e.details();
  }
  return nullptr;
}
}  // namespace

TEST(QueueConfig, ValidBodyRoundTrips) {
  const json body = {{"ml_defaults", {{"ext_ml_gpu_type", "nvidia-a100"}}},
                     {"ml_limits", {{"max_gpu_count", 8}, {"allowed_priority_classes", {"spot", "on-demand"}}}},
                     {"budgets", {{"max_total_gpus", 16}}},
                     {"tenant_quotas", {{"default_max_gpus", 4}, {"tenants", {{"team-a", {{"max_gpus", 8}}}}}}}};
  const auto c = governance::parse_queue_config(body);
  EXPECT_EQ(c.ml_limits.max_gpu_count, 8);
  EXPECT_EQ(c.budgets.max_total_gpus, 16);
  EXPECT_FALSE(c.budgets.max_concurrent_gpu_jobs);
  EXPECT_EQ(c.tenant_quotas.max_gpus.at("team-a"), 8);
  const auto out = governance::to_json(c, "q");
  EXPECT_EQ(out["ml_limits"], body["ml_limits"]);
  EXPECT_EQ(out["tenant_quotas"], body["tenant_quotas"]);
}

TEST(QueueConfig, ErrorsNameTheField) {
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"ml_limits", {{"max_gpu_count", -1}}}}, "ml_limits.max_gpu_count"},
      {{{"ml_limits", {{"max_gpus", 1}}}}, "ml_limits.max_gpus"},
      {{{"ml_limits", {{"allowed_priority_classes", {"gold"}}}}}, "ml_limits.allowed_priority_classes"},
      {{{"budgets", {{"max_total_gpus", "8"}}}}, "budgets.max_total_gpus"},
      {{{"ml_defaults", {{"gpu_type", "x"}}}}, "ml_defaults.gpu_type"},
      {{{"ml_defaults", {{"ext_ml_gpu_count", 0}, {"ext_ml_gpu_type", "nvidia-a100"}}}}, "ml_defaults.ext_ml_gpu_count"},
      {{{"tenant_quotas", {{"tenants", {{"bad name", {{"max_gpus", 1}}}}}}}}, "tenant_quotas.tenants.bad name"},
      {{{"budget", {}}}, "budget"},
  };
  for (const auto& [body, field] : cases) {
    ojs::ErrorCode code{};
    const auto d = error_details([&] { governance::parse_queue_config(body); }, &code);
    ASSERT_TRUE(d.is_object()) << body.dump();
    EXPECT_EQ(code, ojs::ErrorCode::invalid_request);
    EXPECT_EQ(d["field"], field) << body.dump();
  }
}

// One field table drives parsing, the answer and storage; the published schema
// checks requests. The table and the schema name the same members.
TEST(QueueConfigFields, TheTableAndThePublishedSchemaNameTheSameMembers) {
  std::ifstream in(std::string(OJS_SOURCE_DIR) + "/schema/queue-config.schema.json");
  const auto schema = json::parse(in);
  std::set<std::string> in_schema;
  for (const auto& [name, _] : schema["properties"].items())
    if (name != "queue" && name != "version" && name != "updated_at" && name != "expected_version") in_schema.insert(name);
  std::set<std::string> in_table;
  for (const auto& f : governance::queue_config_fields()) EXPECT_TRUE(in_table.insert(f.name).second) << f.name;
  EXPECT_EQ(in_table, in_schema);
  const auto hash_fields = governance::queue_config_hash_fields();
  EXPECT_EQ(std::set<std::string>(hash_fields.begin(), hash_fields.end()).size(), hash_fields.size()) << "a hash field has two owners";
}

TEST(QueueConfigFields, AConfigSurvivesTheStoredForm) {
  const json body = {{"ml_defaults", {{"ext_ml_gpu_type", "nvidia-a100"}}},
                     {"ml_limits", {{"max_gpu_count", 8}, {"max_gpu_memory_gb", 40.5}, {"allowed_gpu_types", {"nvidia-a100"}}}},
                     {"budgets", {{"max_total_gpus", 16}, {"max_concurrent_gpu_jobs", 3}}},
                     {"tenant_quotas", {{"default_max_gpus", 4}, {"tenants", {{"team-a", {{"max_gpus", 8}}}}}}},
                     {"rate_limit", {{"concurrency", 2}, {"rate", {{"limit", 5}, {"period", "PT1M"}}}}},
                     {"policy", "fair"},
                     {"tenant_fairness", {{"weights", {{"tenant:team-a", 3}}}, {"default_weight", 2}}},
                     {"backfill", {{"after_s", 5}, {"max_start_s", 600}}},
                     {"retention", {{"completed", "P7D"}, {"max_jobs", 100}}}};
  const auto config = governance::parse_queue_config(body);
  const auto write = governance::to_stored(config);
  // Outside a cohort, the share a cohort controller set goes too.
  auto replaced = governance::queue_config_hash_fields();
  replaced.insert(replaced.end(), {"cohort_max_gpus", "cohort_epoch"});
  EXPECT_EQ(write.replaced, replaced);
  StoredQueueConfig stored;
  stored.version = 3;
  for (const auto& [field, text] : write.fields) stored.fields[field] = text;
  EXPECT_EQ(stored.fields.at("max_total_gpus"), "16");  // what claim.lua reads
  EXPECT_EQ(stored.fields.at("policy"), "fair");
  EXPECT_EQ(stored.fields.at("rate_period_ms"), "60000");
  EXPECT_TRUE(stored.fields.count("fair_tenants"));
  EXPECT_EQ(write.tenant_max_gpus, (std::vector<std::pair<std::string, long long>>{{"*", 4}, {"team-a", 8}}));
  auto answer = governance::to_json(governance::from_stored(stored), "q");
  EXPECT_EQ(answer["version"], 3);
  answer.erase("version");
  auto expected = governance::to_json(config, "q");
  expected.erase("version");
  EXPECT_EQ(answer, expected);
  EXPECT_EQ(answer["tenant_fairness"]["weights"], (json{{"team-a", 3}}));
}

// A TPU-chip budget is an integer >= 0, stored as the integer claim.lua reads, and read back as sent.
TEST(QueueConfig, TpuChipBudgetIsCheckedStoredAndReadBack) {
  const json body = {{"budgets", {{"max_total_gpus", 8}, {"max_total_tpu_chips", 16}}}};
  const auto config = governance::parse_queue_config(body);
  EXPECT_EQ(config.budgets.max_total_tpu_chips, 16);
  const auto write = governance::to_stored(config);
  StoredQueueConfig stored;
  for (const auto& [field, text] : write.fields) stored.fields[field] = text;
  EXPECT_EQ(stored.fields.at("max_total_tpu_chips"), "16");
  EXPECT_EQ(governance::to_json(governance::from_stored(stored), "q")["budgets"], body["budgets"]);
  for (const json& bad : {json(-1), json("16"), json(1.5), json(nullptr)}) {
    ojs::ErrorCode code{};
    const auto d = error_details([&] { governance::parse_queue_config({{"budgets", {{"max_total_tpu_chips", bad}}}}); }, &code);
    ASSERT_TRUE(d.is_object()) << bad.dump();
    EXPECT_EQ(code, ojs::ErrorCode::invalid_request);
    EXPECT_EQ(d["field"], "budgets.max_total_tpu_chips") << bad.dump();
  }
  // A rewrite without it drops the stored limit (the budgets row owns the field).
  const auto hash_fields = governance::queue_config_hash_fields();
  EXPECT_NE(std::find(hash_fields.begin(), hash_fields.end(), "max_total_tpu_chips"), hash_fields.end());
}

TEST(QueueConfig, ErrorsCarryTheJsonPointerAndTheRule) {
  const auto d = error_details([] { governance::parse_queue_config({{"backfill", {{"after_s", -1}}}}); });
  EXPECT_EQ(d["field"], "backfill.after_s");
  EXPECT_EQ(d["pointer"], "/backfill/after_s");
  EXPECT_EQ(d["rule"], "must be >= 0 and <= 86400");
  const auto rate = error_details([] { governance::parse_rate_limit({{"rate", {{"limit", 0}, {"period", "PT1S"}}}}, ""); });
  EXPECT_EQ(rate["field"], "rate.limit");
  EXPECT_EQ(rate["pointer"], "/rate/limit");
}

TEST(Limits, RefuseWith422NamingTheLimit) {
  governance::MlLimits limits;
  limits.max_gpu_count = 8;
  limits.max_timeout_seconds = 3600;
  limits.allowed_gpu_types = {"nvidia-a100"};
  auto req = [](json doc) { return ojs::ml::parse_requirements(doc); };
  ojs::ErrorCode code{};
  auto d = error_details([&] { governance::enforce_limits(req({{"ext_ml_gpu_count", 16}, {"ext_ml_gpu_type", "nvidia-a100"}}), {}, limits, "queue"); }, &code);
  EXPECT_EQ(code, ojs::ErrorCode::validation_error);
  EXPECT_EQ(d, json({{"limit", "max_gpu_count"}, {"field", "ext_ml_gpu_count"}, {"value", 16}, {"max", 8}, {"scope", "queue"}}));
  d = error_details([&] { governance::enforce_limits(req({{"ext_ml_gpu_type", "nvidia-h100"}}), {}, limits, "queue"); });
  EXPECT_EQ(d["limit"], "allowed_gpu_types");
  d = error_details([&] { governance::enforce_limits(req({{"ext_ml_gpu_count", 1}}), {}, limits, "queue"); });
  EXPECT_EQ(d["limit"], "allowed_gpu_types");  // untyped GPU job on a typed queue
  d = error_details([&] { governance::enforce_limits(req(json::object()), 7200000, limits, "queue"); });
  EXPECT_EQ(d["limit"], "max_timeout_seconds");
  EXPECT_EQ(d["field"], "timeout_ms");
  EXPECT_TRUE(error_details([&] { governance::enforce_limits(req({{"ext_ml_gpu_type", "nvidia-a100"}}), 1000, limits, "queue"); }).is_null());
  EXPECT_TRUE(error_details([&] { governance::enforce_limits(req(json::object()), {}, limits, "queue"); }).is_null());  // CPU job
}

TEST(Defaults, FillOnlyWhatTheProducerDidNotSay) {
  const json defaults = {{"ext_ml_gpu_type", "nvidia-a100"}, {"ext_ml_priority_class", "spot"}, {"ext_ml_checkpoint_enabled", true}};
  json doc = {{"type", "t"}, {"ext_ml_priority_class", "reserved"}, {"meta", {{"checkpoint", {{"enabled", false}}}}}};
  const auto filled = governance::apply_defaults(doc, defaults);
  EXPECT_EQ(filled, std::vector<std::string>{"ext_ml_gpu_type"});
  EXPECT_EQ(doc["ext_ml_priority_class"], "reserved");
  EXPECT_FALSE(doc.contains("ext_ml_checkpoint_enabled"));
  using Groups = std::vector<std::string>;
  EXPECT_EQ(governance::meta_groups_of("ext_ml_gpu_memory_gb"), Groups{"resources"});
  EXPECT_EQ(governance::meta_groups_of("ext_ml_model_version"), Groups{"model"});
  EXPECT_EQ(governance::meta_groups_of("ext_ml_preemption_grace_period_s"), Groups{"preemption"});
  EXPECT_EQ(governance::meta_groups_of("ext_ml_checkpoint_on_preempt"), (Groups{"checkpoint", "preemption"}));
}

// A queue default never beats what the producer said in the SDK meta encoding: the
// defaults and the requirements read one alias table (ojs/ml/meta_aliases.hpp).
TEST(Defaults, ProducerMetaEstimatedDurationBeatsTheQueueDefault) {
  json doc = {{"type", "t"}, {"meta", {{"compute", {{"estimated_duration_seconds", 120}}}}}};
  governance::apply_defaults(doc, {{"ext_ml_estimated_duration_seconds", 5}});
  EXPECT_EQ(ojs::ml::parse_requirements(doc).scheduling.estimated_duration_seconds, 120) << doc.dump();
}

TEST(Defaults, ProducerMetaCheckpointOnPreemptBeatsTheQueueDefault) {
  json doc = {{"type", "t"}, {"meta", {{"preemption", {{"checkpoint_on_preempt", false}}}}}};
  governance::apply_defaults(doc, {{"ext_ml_checkpoint_on_preempt", true}});
  EXPECT_FALSE(ojs::ml::parse_requirements(doc).scheduling.checkpoint.on_preempt) << doc.dump();
}

TEST(Admission, TenantFromMetaOrToken) {
  auth::Identity token;
  token.name = "team-b";
  EXPECT_EQ(governance::resolve_tenant({{"meta", {{"tenant_id", "team-a"}}}}, &token), "team-a");
  EXPECT_EQ(governance::resolve_tenant(json::object(), &token), "team-b");
  EXPECT_EQ(governance::resolve_tenant(json::object(), nullptr), "");
  token.tenant = "team-c";  // pinned
  EXPECT_EQ(governance::resolve_tenant(json::object(), &token), "team-c");
  ojs::ErrorCode code{};
  error_details([&] { governance::resolve_tenant({{"meta", {{"tenant_id", "team-a"}}}}, &token); }, &code);
  EXPECT_EQ(code, ojs::ErrorCode::forbidden);
}

TEST(Admission, AdminLabelKeysAndModelAllowList) {
  const auto r = ojs::ml::parse_requirements({{"ext_ml_node_selector", {{"node.ojs.io/pool", "reserved"}}}});
  const auto d = error_details([&] { governance::check_label_keys(r, {"node.ojs.io/"}); });
  EXPECT_EQ(d["key"], "node.ojs.io/pool");
  const auto m = ojs::ml::parse_requirements({{"ext_ml_model_id", "gpt-x"}});
  EXPECT_EQ(error_details([&] { governance::check_model_allowed(m, {"llama-*"}); })["limit"], "allowed_models");
  EXPECT_TRUE(error_details([&] { governance::check_model_allowed(m, {"gpt-*"}); }).is_null());
}

TEST(Tokens, HashMatchesSha256sumAndComparesInConstantTime) {
  // printf %s secret | sha256sum
  EXPECT_EQ(auth::sha256_hex("secret"), "2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b");
  EXPECT_TRUE(auth::constant_time_equal("abc", "abc"));
  EXPECT_FALSE(auth::constant_time_equal("abc", "abd"));
  EXPECT_FALSE(auth::constant_time_equal("abc", "abcd"));
}

TEST(Tokens, FileEntriesAreValidated) {
  const auto ok = auth::parse_token_file(json::parse(R"([{"name":"ops","roles":["admin","worker"],"sha256":")" +
                                                    auth::sha256_hex("t") + R"("}])"));
  ASSERT_EQ(ok.size(), 1u);
  EXPECT_TRUE(ok[0].identity.has(auth::Role::admin));
  EXPECT_THROW(auth::parse_token_file(json::parse(R"([{"name":"x","roles":["root"],"sha256":"00"}])")), std::runtime_error);
  EXPECT_THROW(auth::parse_token_file(json::parse(R"([{"name":"x","role":"admin","sha256":"ABC"}])")), std::runtime_error);
}

TEST(Roles, EachRoleOnlyWhereItBelongs) {
  using auth::Role;
  const std::set<Role> producer{Role::producer}, worker{Role::worker}, admin{Role::admin};
  EXPECT_TRUE(auth::roles_allow(producer, "POST /ojs/v1/jobs"));
  EXPECT_TRUE(auth::roles_allow(producer, "GET /ojs/v1/jobs/{id}/diagnosis"));
  EXPECT_FALSE(auth::roles_allow(producer, "POST /ojs/v1/workers/fetch"));
  EXPECT_FALSE(auth::roles_allow(producer, "PUT /ojs/v1/admin/queues/{name}/config"));
  EXPECT_TRUE(auth::roles_allow(worker, "POST /ojs/v1/workers/ack"));
  EXPECT_TRUE(auth::roles_allow(worker, "GET /ojs/v1/jobs/{id}"));
  EXPECT_FALSE(auth::roles_allow(worker, "POST /ojs/v1/jobs"));
  EXPECT_FALSE(auth::roles_allow(worker, "GET /ojs/v1/admin/workers"));
  EXPECT_TRUE(auth::roles_allow(admin, "PUT /ojs/v1/admin/queues/{name}/config"));
  EXPECT_TRUE(auth::roles_allow({}, "GET /ojs/v1/health"));
  EXPECT_FALSE(auth::roles_allow({}, "GET /ojs/v1/queues"));
}

TEST(RateLimiter, TokenBucketRefillsAtTheRate) {
  auth::RateLimiter limiter(2.0, 3);  // 2/s, burst 3
  const auto t0 = auth::RateLimiter::Clock::now();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(limiter.acquire("a", 1, t0), 0);
  const double wait = limiter.acquire("a", 1, t0);
  EXPECT_NEAR(wait, 0.5, 1e-9);
  EXPECT_EQ(limiter.acquire("b", 1, t0), 0);  // per key
  EXPECT_EQ(limiter.acquire("a", 1, t0 + std::chrono::milliseconds(500)), 0);
  EXPECT_GT(limiter.acquire("a", 1, t0 + std::chrono::milliseconds(500)), 0);
  EXPECT_EQ(auth::RateLimiter(0, 1).acquire("x"), 0);  // disabled
}

TEST(RateLimiter, ABatchTakesAllItsTokensOrNone) {
  auth::RateLimiter limiter(2.0, 5);  // 2/s, burst 5
  const auto t0 = auth::RateLimiter::Clock::now();
  EXPECT_EQ(limiter.acquire("a", 4, t0), 0);
  EXPECT_NEAR(limiter.acquire("a", 3, t0), 1.0, 1e-9);  // 1 left, 2 missing at 2/s
  EXPECT_EQ(limiter.acquire("a", 1, t0), 0);            // the refused batch took nothing
  EXPECT_GT(limiter.acquire("b", 6, t0), 0);            // beyond the burst: never admitted
}

TEST(QueueConfigFields, ACohortMemberKeepsItsShareAcrossAConfigWrite) {
  const json body = {{"budgets", {{"max_total_gpus", 8}, {"cohort", "lab"}, {"borrowing_limit", 4}, {"lending_limit", 2}}}};
  const auto config = governance::parse_queue_config(body);
  const auto write = governance::to_stored(config);
  EXPECT_EQ(write.replaced, governance::queue_config_hash_fields()) << "cohort_max_gpus stays: the controller owns it";
  EXPECT_EQ(write.cohort, "lab");
  StoredQueueConfig stored;
  for (const auto& [field, value] : write.fields) stored.fields[field] = value;
  EXPECT_EQ(governance::to_json(governance::from_stored(stored), "q")["budgets"], body["budgets"]);
}
