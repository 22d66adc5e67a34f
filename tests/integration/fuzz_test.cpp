// Fuzzing the HTTP edge (issue 12): mutated bodies from a fixed seed against a
// real broker, per endpoint. Whatever the body, the answer is a JSON error or
// success below 500 and the broker stays up. Its own ctest entry (integration.fuzz),
// bounded in time: each endpoint gets an equal share of about a minute and a
// cap on bodies; the counts actually sent are printed and asserted.
// ctest-timeout: 600
#include <gtest/gtest.h>

#include <iterator>
#include <limits>
#include <random>

#include "ojs/client/http_client.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

constexpr int kBodiesPerEndpoint = 2500;
constexpr int kMinBodiesPerEndpoint = 200;  // below this the run proves too little: fail
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
  json seed;
};

}  // namespace

TEST(Fuzz, MutatedBodiesNeverGetA5xxOrKillTheBroker) {
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--checkpoint-prefix", "s3://allowed/"}};
  Api api{broker.url()};
  ojs::HttpClient raw({broker.url()});
  // A live job for the endpoints that name one.
  const auto id = api.push({{"type", "fuzz.task"}, {"args", json::array()}, {"options", {{"queue", "fuzz"}}}});
  api.fetch({"fuzz"}, "fuzzer");

  const json caps = {{"gpu", {{"count", 2}, {"model", "A100"}, {"memory_gb", 80}}}, {"labels", {{"zone", "a"}}}};
  const std::vector<Endpoint> endpoints = {
      {"POST", "/ojs/v1/jobs",
       {{"type", "fuzz.task"}, {"args", {1, "a"}}, {"ext_ml_gpu_count", 1},
        {"options", {{"queue", "fuzz"}, {"priority", 1}, {"retry", {{"max_attempts", 2}, {"initial_interval", "PT1S"}}},
                     {"scheduled_at", "+PT1S"}, {"expires_at", "2099-01-01T00:00:00Z"}, {"timeout_ms", 1000}}}}},
      {"POST", "/ojs/v1/workers/fetch", {{"queues", {"fuzz"}}, {"worker_id", "fuzzer"}, {"count", 1}, {"capabilities", caps}}},
      {"POST", "/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "fuzzer"}, {"result", {{"ok", true}}}}},
      {"POST", "/ojs/v1/workers/nack", {{"job_id", id}, {"worker_id", "fuzzer"}, {"error", {{"message", "x"}, {"retryable", true}}}}},
      {"POST", "/ojs/v1/workers/heartbeat", {{"worker_id", "fuzzer"}, {"active_jobs", {id}}, {"visibility_timeout_ms", 1000}}},
      {"POST", "/ojs/v1/jobs/" + id + "/checkpoint", {{"worker_id", "fuzzer"}, {"step", 10}, {"epoch", 1}, {"storage_key", "s3://allowed/c/1"}}},
      {"PUT", "/ojs/v1/admin/queues/fuzz/config", {{"max_total_gpus", 8}, {"ml_limits", {{"max_timeout_seconds", 60}}}}},
      {"POST", "/ojs/v1/admin/reservations", {{"id", "r1"}, {"worker_ids", {"fuzzer"}}, {"ttl_s", 60}, {"gpus", 1}}},
  };

  Mutator mutator(20261123);
  const auto per_endpoint = std::chrono::duration<double>(kTotalSeconds / static_cast<double>(endpoints.size()));
  for (const auto& ep : endpoints) {
    const auto stop_at = std::chrono::steady_clock::now() + per_endpoint;
    int sent = 0;
    for (; sent < kBodiesPerEndpoint && std::chrono::steady_clock::now() < stop_at; ++sent) {
      const std::string body = mutator.mutate(ep.seed);
      const auto r = raw.request(ep.method, ep.path, body);
      ASSERT_GT(r.status, 0) << "no answer (broker down?) on " << ep.method << " " << ep.path << " after body:\n" << body.substr(0, 2000);
      ASSERT_LT(r.status, 500) << ep.method << " " << ep.path << " answered " << r.status << ": " << r.body.substr(0, 500)
                               << "\nbody:\n" << body.substr(0, 2000);
      ASSERT_TRUE(json::accept(r.body)) << r.body.substr(0, 500);
    }
    std::printf("fuzz %s %s: %d bodies\n", ep.method.c_str(), ep.path.c_str(), sent);
    EXPECT_GE(sent, kMinBodiesPerEndpoint) << ep.path;
    ASSERT_EQ(raw.get("/ojs/v1/health").status, 200);
  }
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
