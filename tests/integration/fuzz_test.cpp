// Fuzzing the HTTP edge (issues 12 and 26): mutated bodies, paths and queries
// from a fixed seed against a real broker, on every endpoint docs/http-api.md
// lists (the test fails when one is missing here). Whatever is sent, the answer
// is below 500 (a JSON error or success for bodies) and the broker stays up. Its
// own ctest entry (integration.fuzz), bounded in time: about a minute shared by the
// endpoints, a cap per endpoint; the counts actually sent are printed and asserted.
// ctest-timeout: 600
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <regex>
#include <set>

#include "ojs/client/http_client.hpp"
#include "support/processes.hpp"
#include "support/sse_client.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

constexpr int kBodiesPerEndpoint = 2500;
constexpr int kMinBodiesPerEndpoint = 50;  // a floor, whatever the time slot: fewer proves too little
constexpr int kMinPathsPerEndpoint = 10;   // paths and queries: fewer shapes to try
constexpr double kTotalSeconds = 60;

class Mutator {
 public:
  explicit Mutator(std::uint64_t seed) : rng_(seed) {}

  std::string mutate(const json& seed) {
    if (pick(40) == 0) return too_deep(seed);
    switch (pick(4)) {
      case 0: return bytes(seed.dump());
      default: {
        json j = seed;
        const int edits = 1 + pick(3);
        for (int i = 0; i < edits; ++i) edit(j, 0);
        return j.dump(-1, ' ', false, json::error_handler_t::replace);
      }
    }
  }

 private:
  std::mt19937_64 rng_;

  int pick(int n) { return static_cast<int>(rng_() % static_cast<std::uint64_t>(n)); }

  json hostile() {
    switch (pick(22)) {
      case 0: return nullptr;
      case 1: return pick(2) == 0;
      case 2: return -1;
      case 3: return std::numeric_limits<std::int64_t>::max();
      case 4: return std::numeric_limits<std::int64_t>::min();
      case 5: return std::numeric_limits<std::uint64_t>::max();
      case 6: return 1e308;
      case 7: return -0.5;
      case 8: return "";
      case 9: return std::string(5000, 'a');
      case 10: return "P99999999999999999999D";
      case 11: return "+PT-1S";
      case 12: return "victim:jobs";
      case 13: return "s3://allowed/../../evil/";
      case 14: return "9999-12-31T23:59:59Z";
      case 15: return json::array({hostile(), hostile()});
      case 16: return json::object({{"gpu", hostile()}});
      case 17: return "0196a0f0-0000-7000-8000-000000000000";
      case 18: return "\xc3\xa9\xe2\x82\xac";
      case 19: return 0;
      case 20: return json::array();
      default: return json::object();
    }
  }

  void edit(json& j, int depth) {
    if (j.is_object() && !j.empty() && depth < 4 && pick(3) != 0) {
      auto it = j.begin();
      std::advance(it, pick(static_cast<int>(j.size())));
      if (pick(5) == 0) j.erase(it);
      else edit(*it, depth + 1);
      return;
    }
    if (j.is_array() && !j.empty() && depth < 4 && pick(3) != 0) {
      edit(j[static_cast<std::size_t>(pick(static_cast<int>(j.size())))], depth + 1);
      return;
    }
    if (j.is_object() && pick(3) == 0) {
      static const char* keys[] = {"worker_id", "queues", "count", "job_id", "step", "options", "ext_ml_gpu_count", "capabilities",
                                   "ttl_s", "active_jobs", "expires_at", "storage_key", "visibility_timeout_ms", "x"};
      j[keys[pick(static_cast<int>(std::size(keys)))]] = hostile();
      return;
    }
    j = hostile();
  }

  // Now and then a well-formed body with an 80,000-deep array at some attribute
  // (spliced in as text: building it as a json value would recurse here).
  std::string too_deep(const json& seed) {
    json j = seed;
    const std::string placeholder = "@@deep@@";
    auto it = j.begin();
    if (!j.empty()) std::advance(it, pick(static_cast<int>(j.size())));
    j[j.empty() ? std::string("x") : it.key()] = placeholder;
    std::string text = j.dump();
    const auto at = text.find("\"" + placeholder + "\"");
    return text.replace(at, placeholder.size() + 2, std::string(80000, '[') + std::string(80000, ']'));
  }

  // Byte-level damage: flips, truncation, invalid UTF-8, stray brackets.
  std::string bytes(std::string s) {
    const int edits = 1 + pick(4);
    for (int i = 0; i < edits && !s.empty(); ++i) {
      const auto at = static_cast<std::size_t>(pick(static_cast<int>(s.size())));
      switch (pick(5)) {
        case 0: s[at] = static_cast<char>(rng_() & 0xff); break;
        case 1: s.resize(at); break;
        case 2: s.insert(at, "\xff\xfe\xc0\x80"); break;
        case 3: s.insert(at, std::string(1 + pick(100), pick(2) ? '[' : '{')); break;
        default: s.insert(at, "\\ud800"); break;
      }
    }
    return s;
  }
};

struct Endpoint {
  std::string method;
  std::string path;
  json seed;  // null: no body (the path and query are what is mutated)
  std::string route = "";  // as docs/http-api.md lists it ("" = method + path)
};

// Hostile path segments and query values, percent-encoded where needed.
class PathMutator {
 public:
  explicit PathMutator(std::uint64_t seed) : rng_(seed) {}

  // `path` with one {param}-like segment (one of `params`) replaced, and a query of
  // `keys` with hostile values now and then.
  std::string mutate(const std::string& path, const std::vector<std::string>& params, const std::vector<std::string>& keys) {
    std::string out = path;
    if (!params.empty() && pick(2) == 0) {
      const auto& p = params[static_cast<std::size_t>(pick(static_cast<int>(params.size())))];
      if (const auto at = out.find(p); at != std::string::npos) out.replace(at, p.size(), segment());
    }
    if (!keys.empty() && pick(3) != 0) {
      out += '?';
      const int n = 1 + pick(3);
      for (int i = 0; i < n; ++i) {
        if (i) out += '&';
        out += keys[static_cast<std::size_t>(pick(static_cast<int>(keys.size())))] + "=" + segment();
      }
    }
    return out;
  }

 private:
  std::mt19937_64 rng_;
  int pick(int n) { return static_cast<int>(rng_() % static_cast<std::uint64_t>(n)); }
  std::string segment() {
    static const char* values[] = {"", "%ff", "%c3%28", "a%2Fb", "..", "%2e%2e", "-1", "0", "99999999999999999999", "1e308",
                                   "x:y", "0196a0f0-0000-7000-8000-000000000000", "fuzz", "%00", "a,b,,c", "%20",
                                   "job.completed,job.started", "available", "dead", "*", "true", "1-1",
                                   "18446744073709551615-18446744073709551615", "1970-01-01T00:00:00Z"};
    if (pick(10) == 0) return std::string(static_cast<std::size_t>(1 + pick(3000)), 'a');
    return values[pick(static_cast<int>(std::size(values)))];
  }
};

struct PathEndpoint {
  std::string method;
  std::string path;                 // with live values in the {param} places
  std::vector<std::string> params;  // which parts of `path` the mutator may replace
  std::vector<std::string> query;   // the documented query keys
  std::string route;                // as docs/http-api.md lists it
};

// "METHOD /path" of every row of the endpoint tables in docs/http-api.md (the query dropped).
std::set<std::string> documented_routes() {
  std::ifstream in(std::string(OJS_SOURCE_DIR) + "/docs/http-api.md");
  std::set<std::string> out;
  std::string line;
  const std::regex row(R"(^\| `([A-Z]+ /[^`?]*))");
  std::smatch m;
  while (std::getline(in, line))
    if (std::regex_search(line, m, row)) out.insert(m[1].str());
  return out;
}

}  // namespace

TEST(Fuzz, MutatedBodiesNeverGetA5xxOrKillTheBroker) {
  RedisServer redis;
  // Event streams opened by the query fuzzing are closed at once; the bound on open
  // streams (a documented 503) is set out of their way.
  BrokerProcess broker{redis.url(), {"--checkpoint-prefix", "s3://allowed/", "--max-event-streams", "10000",
                                     "--event-stream-keepalive-ms", "200"}};
  Api api{broker.url()};
  ojs::HttpClient raw({broker.url()});
  // Live things for the endpoints that name one: a job active on "fuzzer", a
  // dead-lettered job, a workflow, a cron, a reservation.
  const json task = {{"type", "fuzz.task"}, {"args", json::array()}, {"options", {{"queue", "fuzz"}}}};
  const auto id = api.push(task);
  api.fetch({"fuzz"}, "fuzzer");
  const auto dead = api.push({{"type", "fuzz.task"}, {"args", json::array()}, {"options", {{"queue", "fuzz-dead"}, {"retry", {{"max_attempts", 1}}}}}});
  api.fetch({"fuzz-dead"}, "fuzzer");
  api.post("/ojs/v1/workers/nack", {{"job_id", dead}, {"worker_id", "fuzzer"}, {"error", {{"message", "x"}, {"retryable", false}}}});
  const auto workflow = api.post("/ojs/v1/workflows", {{"type", "chain"}, {"steps", {task, task}}}).body["workflow"]["id"].get<std::string>();
  const json cron = {{"name", "fuzz-cron"}, {"cron", "0 3 * * *"}, {"type", "fuzz.task"}, {"args", json::array()}, {"options", {{"queue", "fuzz"}}}};
  ASSERT_EQ(api.post("/ojs/v1/cron", cron).status, 201);
  ASSERT_EQ(api.post("/ojs/v1/admin/reservations", {{"id", "r1"}, {"worker_ids", {"fuzzer"}}, {"ttl_s", 60}}).status, 201);
  const json hook = {{"url", "https://example.com/fuzz"}, {"events", {"job.completed", "job.*"}}, {"secret", "fuzz-secret-0000001"},
                     {"metadata", {{"owner", "fuzz"}}}, {"filter", {{"queues", {"fuzz"}}, {"job_types", {"fuzz.task"}}}}};
  const auto hook_created = api.post("/ojs/v1/webhooks/subscriptions", hook);
  ASSERT_EQ(hook_created.status, 201) << hook_created.body.dump();
  const auto hook_id = hook_created.body["subscription"]["id"].get<std::string>();

  const json schema = {{"type", "object"}, {"properties", {{"n", {{"type", "integer"}, {"maximum", 10}}}, {"s", {{"type", "string"}, {"pattern", "^[a-z]+$"}}}}}};
  ASSERT_EQ(api.post("/ojs/v1/schemas", {{"job_type", "fuzz.typed"}, {"version", "1.0.0"}, {"schema", schema}}).status, 201);
  ASSERT_EQ(api.call("PUT", "/ojs/v1/admin/schemas/fuzz.admin/1", {{"schema", schema}}).status, 201);
  const json caps = {{"gpu", {{"count", 2}, {"model", "A100"}, {"memory_gb", 80}}}, {"labels", {{"zone", "a"}}}};
  const auto waiting = api.push({{"type", "fuzz.task"}, {"args", json::array()}, {"options", {{"queue", "fuzz-est"}}}, {"ext_ml_gpu_count", 1}});
  const json gang_job = {{"type", "fuzz.gang"}, {"args", json::array()}, {"options", {{"queue", "fuzz"}}},
                         {"ext_ml_gpu_count", 1}, {"ext_ml_gang", {{"size", 2}, {"same_label", "zone"}, {"timeout_seconds", 5}}}};
  const std::vector<Endpoint> endpoints = {
      {"POST", "/ojs/v1/jobs",
       {{"type", "fuzz.task"}, {"args", {1, "a"}}, {"ext_ml_gpu_count", 1},
        {"options", {{"queue", "fuzz"}, {"priority", 1}, {"retry", {{"max_attempts", 2}, {"initial_interval", "PT1S"}}},
                     {"scheduled_at", "+PT1S"}, {"expires_at", "2099-01-01T00:00:00Z"}, {"timeout_ms", 1000},
                     {"unique", {{"keys", {"type", "args"}}, {"on_conflict", "replace"}, {"period", "PT1M"}}}}}}},
      {"POST", "/ojs/v1/jobs", gang_job, "POST /ojs/v1/jobs (gang)"},
      {"POST", "/ojs/v1/jobs/batch", {{"jobs", {task, gang_job, task}}}},
      {"POST", "/ojs/v1/workers/fetch", {{"queues", {"fuzz"}}, {"worker_id", "fuzzer"}, {"count", 1}, {"capabilities", caps}}},
      {"POST", "/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "fuzzer"}, {"result", {{"ok", true}}}}},
      {"POST", "/ojs/v1/workers/nack", {{"job_id", id}, {"worker_id", "fuzzer"}, {"error", {{"message", "x"}, {"retryable", true}}}}},
      {"POST", "/ojs/v1/jobs/" + id + "/ack", {{"worker_id", "fuzzer"}, {"result", {{"ok", true}}}}, "POST /ojs/v1/jobs/{id}/ack"},
      {"POST", "/ojs/v1/jobs/" + id + "/nack", {{"worker_id", "fuzzer"}, {"error", {{"message", "x"}}}}, "POST /ojs/v1/jobs/{id}/nack"},
      {"PUT", "/ojs/v1/admin/pools/fuzz-pool",
       {{"queues", {"fuzz", "fuzz-est"}}, {"weights", {{"fuzz", 3}}}, {"strategy", "weighted"}, {"concurrency", 4}},
       "PUT /ojs/v1/admin/pools/{name}"},
      {"POST", "/ojs/v1/workers/fetch", {{"pool", "fuzz-pool"}, {"worker_id", "fuzzer"}, {"count", 2}}, "POST /ojs/v1/workers/fetch (pool)"},
      {"POST", "/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "fuzzer"}, {"fetch", {{"queues", {"fuzz"}}, {"count", 1}, {"capabilities", caps}}}},
       "POST /ojs/v1/workers/ack (fetch)"},
      {"POST", "/ojs/v1/workers/nack", {{"job_id", id}, {"worker_id", "fuzzer"}, {"error", {{"message", "x"}}}, {"fetch", {{"queues", {"fuzz"}}, {"capabilities", caps}}}},
       "POST /ojs/v1/workers/nack (fetch)"},
      {"POST", "/ojs/v1/workers/heartbeat", {{"worker_id", "fuzzer"}, {"active_jobs", {id}}, {"visibility_timeout_ms", 1000}}},
      {"POST", "/ojs/v1/workers/beat", {{"worker_id", "fuzzer-beat"}, {"state", "drain"}, {"active_jobs", 1}}},
      {"POST", "/ojs/v1/workers/progress", {{"job_id", id}, {"worker_id", "fuzzer"}, {"progress", 0.5}, {"data", {{"step", 1}}}, {"message", "m"}}},
      {"PUT", "/ojs/v1/jobs/" + id + "/progress", {{"worker_id", "fuzzer"}, {"progress", 0.6}, {"message", "m"}}, "PUT /ojs/v1/jobs/{id}/progress"},
      {"POST", "/ojs/v1/jobs/" + id + "/checkpoint", {{"worker_id", "fuzzer"}, {"step", 10}, {"epoch", 1}, {"storage_key", "s3://allowed/c/1"}},
       "POST /ojs/v1/jobs/{id}/checkpoint"},
      {"POST", "/ojs/v1/workers/checkpoint", {{"job_id", id}, {"worker_id", "fuzzer"}, {"step", 11}, {"storage_key", "s3://allowed/c/2"}}},
      {"PUT", "/ojs/v1/jobs/" + id + "/checkpoint", {{"worker_id", "fuzzer"}, {"state", {{"cursor", "c"}, {"n", {1, 2}}}}},
       "PUT /ojs/v1/jobs/{id}/checkpoint"},
      {"POST", "/ojs/v1/cron", {{"name", "fuzz-cron-2"}, {"cron", "@every 1h"}, {"timezone", "Europe/Paris"}, {"overlap_policy", "skip"},
                                {"job_template", task}}},
      {"POST", "/ojs/v1/webhooks/subscriptions", hook},
      {"POST", "/ojs/v1/schemas", {{"job_type", "fuzz.typed"}, {"version", "1.1.0"}, {"schema", schema}, {"compatible_with", {"1.0.0"}}}},
      {"PUT", "/ojs/v1/admin/schemas/fuzz.admin/2", {{"schema", schema}}, "PUT /ojs/v1/admin/schemas/{type}/{version}"},
      {"POST", "/ojs/v1/jobs", {{"type", "fuzz.typed"}, {"args", {{{"n", 3}, {"s", "abc"}}}}, {"options", {{"queue", "fuzz"}}}},
       "POST /ojs/v1/jobs (schema-checked)"},
      {"PATCH", "/ojs/v1/webhooks/subscriptions/" + hook_id, {{"events", {"job.failed"}}, {"active", true}, {"url", "https://example.org/x"}},
       "PATCH /ojs/v1/webhooks/subscriptions/{id}"},
      {"POST", "/ojs/v1/workflows", {{"type", "batch"}, {"jobs", {task, task}}, {"callbacks", {{"on_complete", task}}}}},
      {"POST", "/ojs/v1/workflows", {{"type", "chain"}, {"steps", {task, gang_job}}, {"name", "c"}}, "POST /ojs/v1/workflows (chain)"},
      {"PUT", "/ojs/v1/admin/queues/fuzz/config",
       {{"max_total_gpus", 8}, {"ml_limits", {{"max_timeout_seconds", 60}}}, {"tenant_quotas", {{"default_max_gpus", 2}, {"tenants", {{"a", {{"max_gpus", 1}}}}}}},
        {"policy", "fair"}, {"tenant_fairness", {{"weights", {{"a", 2}}}}}, {"rate_limit", {{"concurrency", 2}}}, {"backfill", true}},
       "PUT /ojs/v1/admin/queues/{name}/config"},
      {"PUT", "/ojs/v1/admin/queues/fuzz/rate-limit", {{"concurrency", 2}, {"rate", {{"limit", 10}, {"period", "PT1S"}}}},
       "PUT /ojs/v1/admin/queues/{name}/rate-limit"},
      {"POST", "/ojs/v1/admin/reservations", {{"id", "r2"}, {"worker_ids", {"fuzzer"}}, {"ttl_s", 60}, {"gpus", 1}}},
      {"POST", "/ojs/v1/admin/jobs/bulk/cancel", {{"filter", {{"queue", "fuzz-bulk"}, {"state", "available"}}}, {"confirm", true}, {"limit", 10}},
       "POST /ojs/v1/admin/jobs/bulk/{retry|cancel|delete}"},
      {"POST", "/ojs/v1/admin/dead-letter/retry", {{"queue", "fuzz"}, {"limit", 10}}},
      {"PATCH", "/ojs/v1/jobs/" + id, {{"priority", 3}, {"ext_ml_gpu_count", 1}, {"ext_ml_gpu_type", "nvidia-a100"}}, "PATCH /ojs/v1/jobs/{id}"},
      {"POST", "/ojs/v1/workers/logs",
       {{"worker_id", "fuzzer"}, {"job_id", id}, {"chunks", {{{"stream", "stdout"}, {"data", "line\n"}}}}, {"skipped_bytes", 0}}},
      {"DELETE", "/ojs/v1/admin/queues/fuzz-bulk/jobs", {{"states", {"completed", "cancelled"}}, {"confirm", true}},
       "DELETE /ojs/v1/admin/queues/{name}/jobs"},
      {"POST", "/ojs/v1/jobs/" + waiting + "/what-if",
       {{"changes", {{{"kind", "budget"}, {"gpus", 2}}, {{"kind", "worker"}, {"worker_id", "w"}, {"capabilities", caps}},
                     {{"kind", "end_job"}, {"job_id", id}}, {{"kind", "priority_class"}, {"priority_class", "reserved"}}}}},
       "POST /ojs/v1/jobs/{id}/what-if"},
  };
  const std::vector<PathEndpoint> paths = {
      {"GET", "/ojs/manifest", {}, {}, "GET /ojs/manifest"},
      {"GET", "/ojs/v1/health", {}, {}, "GET /ojs/v1/health"},
      {"GET", "/ojs/v1/workers/fuzzer/health", {"fuzzer"}, {}, "GET /ojs/v1/workers/{id}/health"},
      {"GET", "/metrics", {}, {}, "GET /metrics"},
      {"GET", "/ojs/status", {}, {}, "GET /ojs/status"},
      {"GET", "/ojs/v1/jobs/" + id, {id}, {}, "GET /ojs/v1/jobs/{id}"},
      {"GET", "/ojs/v1/jobs/" + id + "/diagnosis", {id}, {}, "GET /ojs/v1/jobs/{id}/diagnosis"},
      {"GET", "/ojs/v1/jobs/" + id + "/progress", {id}, {}, "GET /ojs/v1/jobs/{id}/progress"},
      {"GET", "/ojs/v1/jobs/" + id + "/checkpoint", {id}, {}, "GET /ojs/v1/jobs/{id}/checkpoint"},
      {"GET", "/ojs/v1/queues", {}, {}, "GET /ojs/v1/queues"},
      {"GET", "/ojs/v1/queues/fuzz/stats", {"fuzz"}, {}, "GET /ojs/v1/queues/{name}/stats"},
      {"GET", "/ojs/v1/queues/fuzz/diagnosis", {"fuzz"}, {}, "GET /ojs/v1/queues/{name}/diagnosis"},
      {"GET", "/ojs/v1/queues/fuzz-est/forecast", {"fuzz-est"}, {"limit"}, "GET /ojs/v1/queues/{name}/forecast"},
      {"POST", "/ojs/v1/queues/fuzz-paused/pause", {"fuzz-paused"}, {}, "POST /ojs/v1/queues/{name}/pause"},
      {"POST", "/ojs/v1/queues/fuzz-paused/resume", {"fuzz-paused"}, {}, "POST /ojs/v1/queues/{name}/resume"},
      {"GET", "/ojs/v1/dead-letter", {}, {"queue", "limit", "offset"}, "GET /ojs/v1/dead-letter"},
      {"POST", "/ojs/v1/dead-letter/" + dead + "/retry", {dead}, {}, "POST /ojs/v1/dead-letter/{id}/retry"},
      {"GET", "/ojs/v1/events", {}, {"types", "queues", "job_types", "job_id", "limit"}, "GET /ojs/v1/events"},
      {"GET", "/ojs/v1/cron", {}, {}, "GET /ojs/v1/cron"},
      {"GET", "/ojs/v1/cron/fuzz-cron", {"fuzz-cron"}, {}, "GET /ojs/v1/cron/{name}"},
      {"GET", "/ojs/v1/workflows/" + workflow, {workflow}, {}, "GET /ojs/v1/workflows/{id}"},
      {"GET", "/ojs/v1/webhooks/subscriptions", {}, {}, "GET /ojs/v1/webhooks/subscriptions"},
      {"GET", "/ojs/v1/rate-limits", {}, {"page", "per_page"}, "GET /ojs/v1/rate-limits"},
      {"GET", "/ojs/v1/rate-limits/fuzz", {"fuzz"}, {}, "GET /ojs/v1/rate-limits/{key}"},
      {"GET", "/ojs/v1/schemas/fuzz.typed", {"fuzz.typed"}, {}, "GET /ojs/v1/schemas/{type}"},
      {"GET", "/ojs/v1/schemas/fuzz.typed/versions", {"fuzz.typed"}, {}, "GET /ojs/v1/schemas/{type}/versions"},
      {"GET", "/ojs/v1/schemas/fuzz.typed/1.0.0", {"fuzz.typed", "1.0.0"}, {}, "GET /ojs/v1/schemas/{type}/{version}"},
      {"GET", "/ojs/v1/admin/schemas/fuzz.admin", {"fuzz.admin"}, {}, "GET /ojs/v1/admin/schemas/{type}"},
      {"GET", "/ojs/v1/admin/schemas/fuzz.admin/versions", {"fuzz.admin"}, {}, "GET /ojs/v1/admin/schemas/{type}/versions"},
      {"GET", "/ojs/v1/admin/schemas/fuzz.admin/1", {"fuzz.admin", "1"}, {}, "GET /ojs/v1/admin/schemas/{type}/{version}"},
      {"GET", "/ojs/v1/webhooks/subscriptions/" + hook_id, {hook_id}, {}, "GET /ojs/v1/webhooks/subscriptions/{id}"},
      {"POST", "/ojs/v1/webhooks/subscriptions/" + hook_id + "/rotate-secret", {hook_id}, {}, "POST /ojs/v1/webhooks/subscriptions/{id}/rotate-secret"},
      {"GET", "/ojs/v1/webhooks/deliveries", {}, {"subscription_id", "limit"}, "GET /ojs/v1/webhooks/deliveries"},
      {"GET", "/ojs/v1/admin/queues", {}, {"page", "per_page"}, "GET /ojs/v1/admin/queues"},
      {"GET", "/ojs/v1/admin/queues/fuzz", {"fuzz"}, {}, "GET /ojs/v1/admin/queues/{name}"},
      {"POST", "/ojs/v1/admin/queues/fuzz-paused/pause", {"fuzz-paused"}, {}, "POST /ojs/v1/admin/queues/{name}/pause"},
      {"POST", "/ojs/v1/admin/queues/fuzz-paused/resume", {"fuzz-paused"}, {}, "POST /ojs/v1/admin/queues/{name}/resume"},
      {"GET", "/ojs/v1/admin/jobs", {}, {"queue", "state", "type", "page", "per_page"}, "GET /ojs/v1/admin/jobs"},
      {"GET", "/ojs/v1/admin/jobs/" + id, {id}, {}, "GET /ojs/v1/admin/jobs/{id}"},
      {"POST", "/ojs/v1/admin/jobs/" + dead + "/retry", {dead}, {}, "POST /ojs/v1/admin/jobs/{id}/retry"},
      {"GET", "/ojs/v1/admin/stats", {}, {}, "GET /ojs/v1/admin/stats"},
      {"GET", "/ojs/v1/admin/usage", {}, {"from", "to", "by", "queue"}, "GET /ojs/v1/admin/usage"},
      {"GET", "/ojs/v1/admin/dead-letter", {}, {"queue", "limit", "offset"}, "GET /ojs/v1/admin/dead-letter"},
      {"GET", "/ojs/v1/admin/workers", {}, {}, "GET /ojs/v1/admin/workers"},
      {"GET", "/ojs/v1/admin/pools", {}, {}, "GET /ojs/v1/admin/pools"},
      {"GET", "/ojs/v1/admin/pools/fuzz-pool", {"fuzz-pool"}, {}, "GET /ojs/v1/admin/pools/{name}"},
      {"GET", "/ojs/v1/admin/scheduling/stats", {}, {}, "GET /ojs/v1/admin/scheduling/stats"},
      {"POST", "/ojs/v1/admin/workers/fuzz-w/quiet", {"fuzz-w"}, {}, "POST /ojs/v1/admin/workers/{id}/quiet"},
      {"POST", "/ojs/v1/admin/workers/fuzz-w/terminate", {"fuzz-w"}, {}, "POST /ojs/v1/admin/workers/{id}/terminate"},
      {"POST", "/ojs/v1/admin/workers/fuzz-w/resume", {"fuzz-w"}, {}, "POST /ojs/v1/admin/workers/{id}/resume"},
      {"POST", "/ojs/v1/admin/workers/fuzz-w/drain", {"fuzz-w"}, {}, "POST /ojs/v1/admin/workers/{id}/drain"},
      {"GET", "/ojs/v1/admin/queues/fuzz/config", {"fuzz"}, {}, "GET /ojs/v1/admin/queues/{name}/config"},
      {"GET", "/ojs/v1/admin/queues/fuzz/rate-limit", {"fuzz"}, {}, "GET /ojs/v1/admin/queues/{name}/rate-limit"},
      {"GET", "/ojs/v1/admin/queues/fuzz/budget", {"fuzz"}, {}, "GET /ojs/v1/admin/queues/{name}/budget"},
      {"GET", "/ojs/v1/admin/queues/fuzz/reconcile", {"fuzz"}, {}, "GET /ojs/v1/admin/queues/{name}/reconcile"},
      {"POST", "/ojs/v1/admin/queues/fuzz/reconcile", {"fuzz"}, {}, "POST /ojs/v1/admin/queues/{name}/reconcile"},
      {"GET", "/ojs/v1/admin/queues/fuzz/jobs", {"fuzz"}, {"state", "limit"}, "GET /ojs/v1/admin/queues/{name}/jobs"},
      {"GET", "/ojs/v1/admin/overview", {}, {}, "GET /ojs/v1/admin/overview"},
      {"GET", "/ojs/v1/admin/reservations", {}, {}, "GET /ojs/v1/admin/reservations"},
      {"GET", "/ojs/v1/ready", {}, {}, "GET /ojs/v1/ready"},
      {"GET", "/ojs/v1/jobs/" + id + "/logs", {id}, {"tail", "since"}, "GET /ojs/v1/jobs/{id}/logs"},
      {"POST", "/ojs/v1/jobs/" + id + "/hold", {id}, {}, "POST /ojs/v1/jobs/{id}/hold"},
      {"POST", "/ojs/v1/jobs/" + id + "/release", {id}, {}, "POST /ojs/v1/jobs/{id}/release"},
      {"GET", "/ojs/v1/workflows", {}, {"page", "per_page"}, "GET /ojs/v1/workflows"},
      {"GET", "/ojs/v1/admin/stats/history", {}, {"period", "since", "until", "queue"}, "GET /ojs/v1/admin/stats/history"},
      {"GET", "/ojs/v1/admin/dead-letter/stats", {}, {}, "GET /ojs/v1/admin/dead-letter/stats"},
      {"GET", "/ojs/v1/admin/tenants", {}, {}, "GET /ojs/v1/admin/tenants"},
      {"GET", "/ojs/v1/admin/tenants/team-a/stats", {"team-a"}, {}, "GET /ojs/v1/admin/tenants/{id}/stats"},
      {"GET", "/ojs/v1/admin/tenants/team-a", {"team-a"}, {}, "GET /ojs/v1/admin/tenants/{id}"},
      {"GET", "/ojs/v1/admin/drain", {}, {}, "GET /ojs/v1/admin/drain"},
      {"POST", "/ojs/v1/admin/workers/fuzz-w/devices/0/drain", {"fuzz-w", "0"}, {}, "POST /ojs/v1/admin/workers/{id}/devices/{index}/drain"},
      {"POST", "/ojs/v1/admin/workers/fuzz-w/devices/0/undrain", {"fuzz-w", "0"}, {}, "POST /ojs/v1/admin/workers/{id}/devices/{index}/undrain"},
      // Destructive ones last: their live target goes with the first valid call.
      {"POST", "/ojs/v1/admin/jobs/" + dead + "/cancel", {dead}, {}, "POST /ojs/v1/admin/jobs/{id}/cancel"},
      {"POST", "/ojs/v1/jobs/" + id + "/kill", {id}, {}, "POST /ojs/v1/jobs/{id}/kill"},
      {"DELETE", "/ojs/v1/dead-letter/" + dead, {dead}, {}, "DELETE /ojs/v1/dead-letter/{id}"},
      {"DELETE", "/ojs/v1/jobs/" + id + "/checkpoint", {id}, {}, "DELETE /ojs/v1/jobs/{id}/checkpoint"},
      {"DELETE", "/ojs/v1/admin/reservations/r1", {"r1"}, {}, "DELETE /ojs/v1/admin/reservations/{id}"},
      {"DELETE", "/ojs/v1/admin/pools/fuzz-pool", {"fuzz-pool"}, {}, "DELETE /ojs/v1/admin/pools/{name}"},
      {"DELETE", "/ojs/v1/admin/workers/fuzz-w", {"fuzz-w"}, {}, "DELETE /ojs/v1/admin/workers/{id}"},
      {"DELETE", "/ojs/v1/cron/fuzz-cron", {"fuzz-cron"}, {}, "DELETE /ojs/v1/cron/{name}"},
      {"DELETE", "/ojs/v1/webhooks/subscriptions/" + hook_id, {hook_id}, {}, "DELETE /ojs/v1/webhooks/subscriptions/{id}"},
      {"DELETE", "/ojs/v1/schemas/fuzz.typed/1.0.0", {"fuzz.typed", "1.0.0"}, {}, "DELETE /ojs/v1/schemas/{type}/{version}"},
      {"DELETE", "/ojs/v1/admin/schemas/fuzz.admin/1", {"fuzz.admin", "1"}, {}, "DELETE /ojs/v1/admin/schemas/{type}/{version}"},
      {"DELETE", "/ojs/v1/workflows/" + workflow, {workflow}, {}, "DELETE /ojs/v1/workflows/{id}"},
      {"DELETE", "/ojs/v1/jobs/" + id, {id}, {}, "DELETE /ojs/v1/jobs/{id}"},
      {"DELETE", "/ojs/v1/admin/queues/fuzz-paused", {"fuzz-paused"}, {}, "DELETE /ojs/v1/admin/queues/{name}"},
      // Draining turns PUSH and FETCH away (503): last, and taken back at once.
      {"POST", "/ojs/v1/admin/drain", {}, {}, "POST /ojs/v1/admin/drain"},
      {"DELETE", "/ojs/v1/admin/drain", {}, {}, "DELETE /ojs/v1/admin/drain"},
  };
  // Server-sent events: the query is mutated; a valid one opens a stream, which is closed.
  const std::vector<PathEndpoint> streams = {
      {"GET", "/ojs/v1/events/stream", {}, {"types", "queues", "job_types", "job_id"}, "GET /ojs/v1/events/stream"},
      {"GET", "/ojs/v1/queues/fuzz/events", {"fuzz"}, {"types", "job_types"}, "GET /ojs/v1/queues/{name}/events"},
      {"GET", "/ojs/v1/jobs/" + id + "/events", {id}, {"types"}, "GET /ojs/v1/jobs/{id}/events"},
      {"GET", "/ojs/v1/jobs/" + id + "/logs", {id}, {"follow", "tail", "since"}, "GET /ojs/v1/jobs/{id}/logs (follow)"},
  };

  // Every endpoint docs/http-api.md lists is fuzzed here.
  std::set<std::string> covered;
  for (const auto& ep : endpoints) covered.insert(ep.route.empty() ? ep.method + " " + ep.path : ep.route);
  for (const auto* list : {&paths, &streams})
    for (const auto& ep : *list) covered.insert(ep.route);
  const auto documented = documented_routes();
  ASSERT_GT(documented.size(), 50u) << "docs/http-api.md not read";
  for (const auto& route : documented) EXPECT_TRUE(covered.count(route)) << route << " (docs/http-api.md) is not fuzzed";

  auto check = [&](const std::string& what, const ojs::HttpResponse& r, const std::string& sent) {
    ASSERT_GT(r.status, 0) << "no answer (broker down?) on " << what << " after:\n" << sent.substr(0, 2000);
    ASSERT_LT(r.status, 500) << what << " answered " << r.status << ": " << r.body.substr(0, 500) << "\nsent:\n" << sent.substr(0, 2000);
  };
  Mutator mutator(20261123);
  // Bodies get most of the time; paths and queries the rest.
  const auto per_body = std::chrono::duration<double>(kTotalSeconds * 0.7 / static_cast<double>(endpoints.size()));
  for (const auto& ep : endpoints) {
    const auto stop_at = std::chrono::steady_clock::now() + per_body;
    int sent = 0;
    for (; sent < kBodiesPerEndpoint && (sent < kMinBodiesPerEndpoint || std::chrono::steady_clock::now() < stop_at); ++sent) {
      const std::string body = mutator.mutate(ep.seed);
      const auto r = raw.request(ep.method, ep.path, body);
      check(ep.method + " " + ep.path, r, body);
      ASSERT_TRUE(json::accept(r.body)) << r.body.substr(0, 500);
    }
    std::printf("fuzz %s %s: %d bodies\n", ep.method.c_str(), ep.path.c_str(), sent);
    ASSERT_EQ(raw.get("/ojs/v1/health").status, 200);
  }
  PathMutator paths_mutator(20261126);
  const auto per_path = std::chrono::duration<double>(kTotalSeconds * 0.3 / static_cast<double>(paths.size() + streams.size()));
  for (const auto& ep : paths) {
    const auto stop_at = std::chrono::steady_clock::now() + per_path;
    int sent = 0;
    // The time slot is a target, the minimum a floor: a slow admin read (the tenant
    // counts scan every job, up to 10k per index) still gets its share of paths.
    for (; sent < kBodiesPerEndpoint && (sent < kMinPathsPerEndpoint || std::chrono::steady_clock::now() < stop_at); ++sent) {
      const auto target = paths_mutator.mutate(ep.path, ep.params, ep.query);
      check(ep.method + " " + target, raw.request(ep.method, target, ep.method == "POST" ? "{}" : ""), target);
    }
    std::printf("fuzz %s %s: %d paths\n", ep.method.c_str(), ep.path.c_str(), sent);
    // A mutated path can drain the broker for real: the client resolves dot segments
    // (workers/../drain is POST /ojs/v1/admin/drain), and a draining broker rightly
    // answers PUSH, FETCH and readiness with 503. Take it back before the next one.
    ASSERT_EQ(raw.request("DELETE", "/ojs/v1/admin/drain", "").status, 200);
  }
  for (const auto& ep : streams) {
    const auto stop_at = std::chrono::steady_clock::now() + per_path;
    int sent = 0;
    // As for paths, the slot is a target and the minimum a floor: one stream that a
    // loaded machine answers late (CI once saw a single query in the slot) must not
    // turn the run into a wall-time assertion.
    for (; sent < kBodiesPerEndpoint && (sent < kMinPathsPerEndpoint || std::chrono::steady_clock::now() < stop_at); ++sent) {
      const auto target = paths_mutator.mutate(ep.path, ep.params, ep.query);
      SseClient sse(broker.port(), target);
      const int status = sse.status(std::chrono::seconds(10));
      ASSERT_GT(status, 0) << "no answer on " << target;
      ASSERT_LT(status, 500) << target << ": " << sse.error_body().substr(0, 300);
    }
    std::printf("fuzz %s %s: %d queries\n", ep.method.c_str(), ep.path.c_str(), sent);
  }
  ASSERT_EQ(raw.get("/ojs/v1/health").status, 200);
}

// The two shapes that crashed the broker outright, on every body-taking endpoint.
TEST(Fuzz, DeepNestingAndInvalidUtf8AreRefusedEverywhere) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  ojs::HttpClient raw({broker.url()});
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const std::vector<std::pair<std::string, std::string>> endpoints = {
      {"POST", "/ojs/v1/jobs"}, {"POST", "/ojs/v1/workers/fetch"}, {"POST", "/ojs/v1/workers/ack"},
      {"POST", "/ojs/v1/workers/nack"}, {"POST", "/ojs/v1/workers/heartbeat"}, {"POST", "/ojs/v1/workers/checkpoint"},
      {"PUT", "/ojs/v1/admin/queues/fuzz/config"}, {"POST", "/ojs/v1/admin/reservations"}};
  for (const auto& [method, path] : endpoints) {
    for (const std::string& body : {R"({"a":)" + deep + "}", deep, std::string(R"({"worker_id":"\xff\xfe","queues":["\xc0\x80"]})")}) {
      const auto r = raw.request(method, path, body);
      EXPECT_EQ(r.status, 400) << method << " " << path << ": " << r.body.substr(0, 300);
      ASSERT_EQ(raw.get("/ojs/v1/health").status, 200) << "broker died on " << method << " " << path;
    }
    for (const std::string& bad_path : {path + "/%ff", path + "?x=%ff"}) {
      const auto r = raw.request(method, bad_path, "{}");
      EXPECT_GE(r.status, 400);
      EXPECT_LT(r.status, 500) << bad_path;
    }
  }
  ASSERT_EQ(raw.get("/ojs/v1/health").status, 200);
}
