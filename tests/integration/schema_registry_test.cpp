// The schema registry (ojs-schema-registry.md, ojs-job-versioning.md §6, §11) on a
// real broker and Redis: both bindings, PUSH's args checked against the registered
// schema (strict refuses, warn answers a warning), hostile schemas and values,
// tenants kept apart, and Redis gone answered 503.
#include <gtest/gtest.h>

#include "support/processes.hpp"
#include "support/role_tokens.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

const json kInvoiceArgs = {{"type", "array"},
                           {"prefixItems",
                            {{{"type", "object"},
                              {"required", {"customer_id", "amount", "currency"}},
                              {"properties",
                               {{"customer_id", {{"type", "string"}}},
                                {"amount", {{"type", "integer"}, {"minimum", 0}}},
                                {"currency", {{"type", "string"}, {"pattern", "^[A-Z]{3}$"}}}}}}}},
                           {"items", false}};

json invoice_job(json args, json version = nullptr) {
  json job = {{"type", "invoice.generate"}, {"args", std::move(args)}, {"options", {{"queue", "schemas-q"}}}};
  if (!version.is_null()) job["version"] = std::move(version);
  return job;
}

json registration(const std::string& type, const std::string& version, json schema) {
  return {{"job_type", type}, {"version", version}, {"schema", std::move(schema)}};
}

}  // namespace

class SchemaRegistry : public ::testing::Test {
 protected:
  std::string dir = make_temp_dir("schemas");
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--auth-file", write_role_tokens(dir), "--schema-validation", "strict"}};
  Api admin{broker.url(), "admin-token"};
  Api team_a{broker.url(), "team-a-token"};
  Api team_b{broker.url(), "team-b-token"};
  Api node_a{broker.url(), "node-a-token"};
};

TEST_F(SchemaRegistry, RegistersListsReadsAndDeletesVersions) {
  const auto first = admin.post("/ojs/v1/schemas", registration("invoice.generate", "1.0.0", kInvoiceArgs));
  ASSERT_EQ(first.status, 201) << first.body.dump();
  EXPECT_EQ(first.body["schema"]["job_type"], "invoice.generate");
  EXPECT_EQ(first.body["schema"]["version"], "1.0.0");
  EXPECT_EQ(first.body["schema"]["schema"], kInvoiceArgs);  // as registered, not as rewritten
  EXPECT_TRUE(first.body["schema"]["created_at"].is_string());

  // §4.1: the same version again is 409, and so is one of equal precedence.
  for (const auto* again : {"1.0.0", "1.0", "1"}) {
    const auto r = admin.post("/ojs/v1/schemas", registration("invoice.generate", again, {{"type", "array"}}));
    EXPECT_EQ(r.status, 409) << again << " " << r.body.dump();
    EXPECT_EQ(r.body["error"]["details"]["existing_version"], "1.0.0");
  }
  for (const auto* v : {"1.10.0", "1.2.0", "2.0.0-rc.1"})
    ASSERT_EQ(admin.post("/ojs/v1/schemas", registration("invoice.generate", v, kInvoiceArgs)).status, 201) << v;

  // §4.3 and §6.3: newest first by SemVer precedence (1.10 above 1.2; a pre-release of 2 above 1.10).
  const auto listed = admin.get("/ojs/v1/schemas/invoice.generate/versions");
  ASSERT_EQ(listed.status, 200);
  std::vector<std::string> order;
  for (const auto& v : listed.body["versions"]) order.push_back(v["version"]);
  EXPECT_EQ(order, (std::vector<std::string>{"2.0.0-rc.1", "1.10.0", "1.2.0", "1.0.0"}));
  EXPECT_EQ(listed.body["versions"][0]["is_latest"], true);
  EXPECT_EQ(listed.body["versions"][1]["is_latest"], false);

  EXPECT_EQ(admin.get("/ojs/v1/schemas/invoice.generate").body["schema"]["version"], "2.0.0-rc.1");
  EXPECT_EQ(admin.get("/ojs/v1/schemas/invoice.generate/1.2.0").body["schema"]["version"], "1.2.0");
  const auto removed = admin.call("DELETE", "/ojs/v1/schemas/invoice.generate/2.0.0-rc.1");
  EXPECT_EQ(removed.status, 200) << removed.body.dump();
  EXPECT_EQ(admin.get("/ojs/v1/schemas/invoice.generate").body["schema"]["version"], "1.10.0");
  EXPECT_EQ(admin.call("DELETE", "/ojs/v1/schemas/invoice.generate/2.0.0-rc.1").status, 404);
  EXPECT_EQ(admin.get("/ojs/v1/schemas/never.registered").status, 404);
  EXPECT_EQ(admin.get("/ojs/v1/schemas/never.registered/versions").body["versions"], json::array());

  // The admin binding (ojs-job-versioning.md §11): the body itself, `type` and a numeric version.
  const auto put = admin.call("PUT", "/ojs/v1/admin/schemas/email.send/1", {{"args_schema", {{"type", "array"}}}});
  ASSERT_EQ(put.status, 201) << put.body.dump();
  EXPECT_EQ(put.body["type"], "email.send");
  EXPECT_EQ(put.body["version"], 1);
  EXPECT_EQ(admin.call("PUT", "/ojs/v1/admin/schemas/email.send/1", {{"schema", {{"type", "array"}}}}).status, 409);
  ASSERT_EQ(admin.call("PUT", "/ojs/v1/admin/schemas/email.send/2", {{"schema", {{"type", "array"}}}}).status, 201);
  const auto latest = admin.get("/ojs/v1/admin/schemas/email.send");
  EXPECT_EQ(latest.body["version"], 2);
  EXPECT_EQ(latest.body["versions"].size(), 2u);
  EXPECT_EQ(admin.get("/ojs/v1/admin/schemas/email.send/1").body["version"], 1);
  // A body naming another type or version than the path is refused.
  const auto mismatch = admin.call("PUT", "/ojs/v1/admin/schemas/email.send/3", {{"type", "sms.send"}, {"schema", json::object()}});
  EXPECT_EQ(mismatch.status, 400);
  EXPECT_EQ(mismatch.body["error"]["details"]["field"], "type");
}

TEST_F(SchemaRegistry, StrictModeRefusesArgsThatBreakTheSchema) {
  ASSERT_EQ(admin.post("/ojs/v1/schemas", registration("invoice.generate", "1.0", kInvoiceArgs)).status, 201);
  const json good = json::array({{{"customer_id", "c1"}, {"amount", 10}, {"currency", "USD"}}});
  EXPECT_EQ(admin.post("/ojs/v1/jobs", invoice_job(good, "1.0")).status, 201);

  // The field and the rule are named (the pointer reaches into the tuple).
  const auto missing = admin.post("/ojs/v1/jobs", invoice_job(json::array({{{"customer_id", "c1"}, {"amount", 10}}}), "1.0"));
  ASSERT_EQ(missing.status, 422) << missing.body.dump();
  const auto& details = missing.body["error"]["details"];
  EXPECT_EQ(missing.body["error"]["code"], "validation_error");
  EXPECT_EQ(details["field"], "args.currency");
  EXPECT_EQ(details["rule"], "is required");
  EXPECT_EQ(details["pointer"], "/args/0/currency");
  EXPECT_EQ(details["job_type"], "invoice.generate");
  EXPECT_EQ(details["validation_errors"].size(), 1u);

  // An unversioned job is checked against the latest; the pattern is enforced.
  const auto lower = admin.post("/ojs/v1/jobs", invoice_job(json::array({{{"customer_id", "c"}, {"amount", 1}, {"currency", "usd"}}})));
  ASSERT_EQ(lower.status, 422) << lower.body.dump();
  EXPECT_EQ(lower.body["error"]["details"]["field"], "args.currency");
  // prefixItems with items false: nothing after the tuple.
  EXPECT_EQ(admin.post("/ojs/v1/jobs", invoice_job(json::array({good[0], "extra"}), 1)).status, 422);
  // A version without a schema is not checked (there is nothing to check it against).
  EXPECT_EQ(admin.post("/ojs/v1/jobs", invoice_job(json::array({"anything"}), "9.0")).status, 201);

  // Batch PUSH: one job breaking the schema refuses the batch, naming it.
  const auto batch = admin.post("/ojs/v1/jobs/batch", {{"jobs", {invoice_job(good), invoice_job(json::array({1}))}}});
  EXPECT_EQ(batch.status, 422) << batch.body.dump();
  EXPECT_NE(batch.body["error"]["message"].get<std::string>().find("jobs[1]"), std::string::npos);

  // Deleted, the schema checks nothing any more (this broker forgets it at once).
  ASSERT_EQ(admin.call("DELETE", "/ojs/v1/schemas/invoice.generate/1.0").status, 200);
  EXPECT_EQ(admin.post("/ojs/v1/jobs", invoice_job(json::array({1}))).status, 201);
}

TEST(SchemaRegistryWarn, TheDefaultModeAcceptsWithAWarning) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  ASSERT_EQ(api.post("/ojs/v1/schemas", registration("invoice.generate", "1", kInvoiceArgs)).status, 201);
  const auto pushed = api.post("/ojs/v1/jobs", invoice_job(json::array({{{"customer_id", "c"}}})));
  ASSERT_EQ(pushed.status, 201) << pushed.body.dump();
  ASSERT_EQ(pushed.body["warnings"].size(), 1u);
  EXPECT_NE(pushed.body["warnings"][0].get<std::string>().find("is required"), std::string::npos) << pushed.body.dump();
  const json good = json::array({{{"customer_id", "c1"}, {"amount", 10}, {"currency", "USD"}}});
  EXPECT_FALSE(api.post("/ojs/v1/jobs", invoice_job(good)).body.contains("warnings"));
  const auto batch = api.post("/ojs/v1/jobs/batch", {{"jobs", {invoice_job(good), invoice_job(json::array({1}))}}});
  ASSERT_EQ(batch.status, 201) << batch.body.dump();
  ASSERT_EQ(batch.body["warnings"].size(), 1u);
  EXPECT_EQ(batch.body["warnings"][0].get<std::string>().rfind("jobs[1]: ", 0), 0u);
}

TEST_F(SchemaRegistry, HostileSchemasAndNamesAreRefusedByName) {
  const auto refused = [&](const json& body) {
    const auto r = admin.post("/ojs/v1/schemas", body);
    EXPECT_EQ(r.status, 400) << body.dump().substr(0, 200) << " -> " << r.body.dump();
    return r.body["error"]["details"].value("field", "");
  };
  EXPECT_EQ(refused(registration("a.b", "1", {{"type", "strnig"}})), "schema");
  EXPECT_EQ(refused(registration("a.b", "1", "not a schema")), "schema");
  EXPECT_EQ(refused({{"job_type", "a.b"}, {"version", "1"}}), "schema");
  EXPECT_EQ(refused(registration("a.b", "1", {{"patternProperties", {{"^x", true}}}})), "schema.patternProperties");
  EXPECT_EQ(refused(registration("a.b", "1", {{"$ref", "http://169.254.169.254/latest"}})), "schema.$ref");
  EXPECT_EQ(refused(registration("a.b", "1", {{"items", {{"pattern", "(a)\\1"}}}})), "schema.items.pattern");
  EXPECT_EQ(refused(registration("a.b", "1", {{"items", {{"pattern", "(?=a)a"}}}})), "schema.items.pattern");
  EXPECT_EQ(refused(registration("a.b", "1", {{"$ref", "#"}})), "schema");  // refers to itself on the same value
  json big = {{"enum", json::array()}};
  for (int i = 0; i < 5000; ++i) big["enum"].push_back("value-number-" + std::to_string(i));
  EXPECT_EQ(refused(registration("a.b", "1", big)), "schema");
  EXPECT_EQ(refused(registration("Bad Type", "1", json::object())), "job_type");
  EXPECT_EQ(refused(registration("a.b/../c", "1", json::object())), "job_type");
  for (const auto* version : {"01", "1.2.3.4", "1.x", "", "1+build", "-1"}) EXPECT_EQ(refused(registration("a.b", version, json::object())), "version") << version;
  EXPECT_EQ(admin.get("/ojs/v1/schemas/A..b").status, 400);
  EXPECT_EQ(admin.call("PUT", "/ojs/v1/admin/schemas/a.b/1.0.0.0", {{"schema", json::object()}}).status, 400);
}

TEST_F(SchemaRegistry, LongValuesAgainstPatternsNeitherCrashNorStall) {
  // The recursive regex engine would overflow the PUSH fiber's stack on these.
  const json schema = {{"type", "array"}, {"items", {{"type", "string"}, {"pattern", "^(a|b|c|d|e|f|g|h)*$"}}}};
  ASSERT_EQ(admin.post("/ojs/v1/schemas", registration("long.values", "1", schema)).status, 201);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(admin.post("/ojs/v1/jobs", {{"type", "long.values"}, {"args", json::array({std::string(200000, 'a')})}}).status, 201);
  const auto mismatch = admin.post("/ojs/v1/jobs", {{"type", "long.values"}, {"args", json::array({std::string(200000, 'a') + "z"})}});
  EXPECT_EQ(mismatch.status, 422) << mismatch.body.dump().substr(0, 300);
  // Beyond the budget of one job's pattern checks: refused, not checked for minutes.
  json many = json::array();
  for (int i = 0; i < 12; ++i) many.push_back(std::string(250000, 'a'));
  const auto costly = admin.post("/ojs/v1/jobs", {{"type", "long.values"}, {"args", many}});
  EXPECT_EQ(costly.status, 422);
  EXPECT_NE(costly.body.dump().find("pattern checks may take"), std::string::npos) << costly.body.dump().substr(0, 300);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  EXPECT_EQ(admin.get("/ojs/v1/health").status, 200);
}

TEST_F(SchemaRegistry, ATenantSeesAndChangesOnlyItsOwn) {
  ASSERT_EQ(team_a.post("/ojs/v1/schemas", registration("invoice.generate", "1", kInvoiceArgs)).status, 201);
  EXPECT_EQ(team_b.get("/ojs/v1/schemas/invoice.generate").status, 404);
  EXPECT_EQ(team_b.get("/ojs/v1/schemas/invoice.generate/versions").body["versions"], json::array());
  EXPECT_EQ(team_b.call("DELETE", "/ojs/v1/schemas/invoice.generate/1").status, 404);
  EXPECT_EQ(admin.get("/ojs/v1/schemas/invoice.generate").status, 404);  // the untenanted namespace
  EXPECT_EQ(team_a.get("/ojs/v1/schemas/invoice.generate").status, 200);  // still there

  // team-a's schema checks team-a's jobs only.
  const json bad = json::array({{{"customer_id", "c"}}});
  EXPECT_EQ(team_a.post("/ojs/v1/jobs", invoice_job(bad)).status, 422);
  EXPECT_EQ(team_b.post("/ojs/v1/jobs", invoice_job(bad)).status, 201);
  // team-b may register the same type and version in its own namespace.
  EXPECT_EQ(team_b.post("/ojs/v1/schemas", registration("invoice.generate", "1", {{"type", "array"}})).status, 201);

  // Workers read schemas (discovery) but do not register them; the admin paths are the admin's.
  EXPECT_EQ(node_a.get("/ojs/v1/schemas/invoice.generate").status, 404);
  EXPECT_EQ(node_a.post("/ojs/v1/schemas", registration("w.type", "1", json::object())).status, 403);
  EXPECT_EQ(team_a.call("PUT", "/ojs/v1/admin/schemas/x.y/1", {{"schema", json::object()}}).status, 403);
}

TEST_F(SchemaRegistry, RedisGoneIsA503) {
  ASSERT_EQ(admin.post("/ojs/v1/schemas", registration("outage.type", "1", json::object())).status, 201);
  redis.stop();
  EXPECT_EQ(admin.post("/ojs/v1/schemas", registration("outage.type", "2", json::object())).status, 503);
  EXPECT_EQ(admin.get("/ojs/v1/schemas/outage.type").status, 503);
  EXPECT_EQ(admin.get("/ojs/v1/admin/schemas/outage.type/versions").status, 503);
  EXPECT_EQ(admin.call("DELETE", "/ojs/v1/schemas/outage.type/1").status, 503);
}
