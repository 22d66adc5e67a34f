#include "worker/agent/agent.hpp"
#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <deque>
#include <map>
#include <fstream>
#include <thread>

namespace ojs::worker {
namespace {

using namespace std::chrono_literals;

// In-process broker: scripted FETCH and heartbeat replies, every call recorded.
class FakeBroker : public BrokerApi {
 public:
  struct Call {
    std::string what;
    std::string job_id;
    nlohmann::json body;
  };
  std::deque<BrokerReply> fetch_replies;      // then: no jobs
  std::deque<BrokerReply> heartbeat_replies;  // then: {"state":"running"}
  // ACK with fetch: the `fetch` part answered to an ACK/NACK that carries one (none left:
  // the reply has no `fetch`, as from a broker without the extension).
  std::deque<nlohmann::json> fetch_parts;
  std::deque<BrokerReply> report_replies;  // scripted ACK/NACK replies, before fetch_parts
  std::vector<Call> calls;

  BrokerReply fetch(const nlohmann::json& body) override {
    calls.push_back({"fetch", "", body});
    return next(fetch_replies, {{"jobs", nlohmann::json::array()}, {"state", "running"}});
  }
  BrokerReply ack(const nlohmann::json& body) override { return record("ack", body); }
  BrokerReply nack(const nlohmann::json& body) override { return record("nack", body); }
  BrokerReply heartbeat(const nlohmann::json& body) override {
    calls.push_back({"heartbeat", "", body});
    return next(heartbeat_replies, {{"state", "running"}, {"directive", ""}});
  }
  BrokerReply commit_checkpoint(const std::string& job_id, const nlohmann::json& body) override {
    calls.push_back({"checkpoint", job_id, body});
    return {200, nlohmann::json::object(), ""};
  }

  std::vector<Call> reports() const {
    std::vector<Call> out;
    for (const auto& c : calls)
      if (c.what == "ack" || c.what == "nack" || c.what == "checkpoint") out.push_back(c);
    return out;
  }
  std::size_t count(const std::string& what) const {
    return static_cast<std::size_t>(std::count_if(calls.begin(), calls.end(), [&](const Call& c) { return c.what == what; }));
  }

 private:
  BrokerReply record(const char* what, const nlohmann::json& body) {
    calls.push_back({what, body.value("job_id", ""), body});
    if (!report_replies.empty()) return next(report_replies, {});
    if (body.contains("fetch") && !fetch_parts.empty()) {
      nlohmann::json part = fetch_parts.front();
      fetch_parts.pop_front();
      return {200, {{"state", "completed"}, {"fetch", std::move(part)}}, ""};
    }
    return {200, nlohmann::json::object(), ""};
  }
  static BrokerReply next(std::deque<BrokerReply>& replies, nlohmann::json fallback) {
    if (replies.empty()) return {200, std::move(fallback), ""};
    BrokerReply reply = replies.front();
    replies.pop_front();
    return reply;
  }
};

BrokerReply jobs_reply(nlohmann::json jobs, nlohmann::json extra = nlohmann::json::object()) {
  nlohmann::json body = {{"jobs", std::move(jobs)}, {"state", "running"}};
  body.update(extra);
  return {200, body, ""};
}

nlohmann::json job(const std::string& id, const std::string& type, nlohmann::json extra = nlohmann::json::object()) {
  nlohmann::json j = {{"id", id}, {"type", type}, {"queue", "default"}, {"attempt", 1}};
  j.update(extra);
  return j;
}

class AgentTest : public ::testing::Test {
 protected:
  testing::ScratchDir dir_{"agent"};
  FakeBroker broker_;
  WorkerConfig config_;
  AgentOptions options_;
  bool stop_ = false;

  void SetUp() override {
    config_.work_dir = dir_.path().string();
    config_.concurrency = 2;
    config_.kill_grace_s = 1;
    config_.checkpoint_poll_s = 0.1;
    config_.commands["ok"] = shell_command(R"(echo '{"done": true}')");
    config_.commands["fail.*"] = shell_command("echo oops >&2; exit 3");
    config_.commands["sleep"] = shell_command("sleep 30");
    options_.worker_id = "w-test";
    options_.queues = {"default", "gpu"};
    options_.poll_interval = 20ms;
    options_.once = true;
  }

  Agent make_agent(nlohmann::json capabilities = {{"accelerator", "cpu"}}) {
    return Agent(broker_, config_, options_, std::move(capabilities), [this] { return stop_; });
  }

  // Turns the loop like Agent::run, with an optional hook per turn; false on timeout.
  static bool run(Agent& agent, std::chrono::milliseconds limit = 10s, const std::function<void()>& each_turn = {}) {
    const auto give_up = SteadyClock::now() + limit;
    while (SteadyClock::now() < give_up) {
      if (!agent.turn(SteadyClock::now())) return true;
      if (each_turn) each_turn();
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }
};

TEST_F(AgentTest, OnceModeRunsJobsReportsThemAndExitsWhenTheQueueIsEmpty) {
  broker_.fetch_replies.push_back(jobs_reply({job("j-ok", "ok"), job("j-fail", "fail.hard")}));
  auto agent = make_agent();
  ASSERT_TRUE(run(agent));
  const auto& first_fetch = broker_.calls.at(1);  // heartbeat goes first
  ASSERT_EQ(first_fetch.what, "fetch");
  EXPECT_EQ(first_fetch.body["worker_id"], "w-test");
  EXPECT_EQ(first_fetch.body["queues"], nlohmann::json({"default", "gpu"}));
  EXPECT_EQ(first_fetch.body["count"], 2);
  EXPECT_EQ(first_fetch.body["capabilities"]["accelerator"], "cpu");
  EXPECT_EQ(first_fetch.body["visibility_timeout_ms"], 60000);

  const auto reports = broker_.reports();
  ASSERT_EQ(reports.size(), 2u);
  for (const auto& r : reports) {
    if (r.job_id == "j-ok") {
      EXPECT_EQ(r.what, "ack");
      EXPECT_EQ(r.body["result"], nlohmann::json({{"done", true}}));
      EXPECT_EQ(r.body["worker_id"], "w-test");
    } else {
      EXPECT_EQ(r.what, "nack");
      EXPECT_EQ(r.body["error"]["code"], "exit_3");
      EXPECT_EQ(r.body["error"]["details"]["stderr_tail"], "oops\n");
      EXPECT_FALSE(r.body.contains("requeue"));
    }
  }
  EXPECT_EQ(agent.active_jobs(), 0u);
}

TEST_F(AgentTest, JobsWithoutACommandAreRefused) {
  broker_.fetch_replies.push_back(jobs_reply({job("j-x", "email.send")}));
  auto agent = make_agent();
  ASSERT_TRUE(run(agent));
  const auto reports = broker_.reports();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].what, "nack");
  EXPECT_EQ(reports[0].body["error"]["code"], "unsupported");
}

TEST_F(AgentTest, ModelChecksumMismatchIsRefusedForGood) {
  config_.models_dir = dir_.path().string();
  std::ofstream(dir_.path() / "tiny") << "weights";
  broker_.fetch_replies.push_back(jobs_reply(
      {job("j-m", "ok", {{"ext_ml_model_id", "tiny"}, {"ext_ml_model_checksum", "sha256:" + std::string(64, 'a')}})}));
  auto agent = make_agent();
  ASSERT_TRUE(run(agent));
  const auto reports = broker_.reports();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].body["error"]["code"], "model_checksum_mismatch");
  EXPECT_EQ(reports[0].body["error"]["retryable"], false);
}

TEST_F(AgentTest, BusyDevicesAreNotSharedAndAreAdvertisedInUse) {
  config_.drain_timeout_s = 0;
  broker_.fetch_replies.push_back(jobs_reply({job("j-1", "sleep", {{"ext_ml_assigned_devices", {0, 1}}}),
                                              job("j-2", "ok", {{"ext_ml_assigned_devices", {1}}})}));
  auto agent = make_agent({{"accelerator", "gpu"}, {"devices", {{{"index", 0}}, {{"index", 1}}, {{"index", 2}}}}});
  // Once the queue is empty (second FETCH), stop: j-1 is released at once.
  ASSERT_TRUE(run(agent, 10s, [&] { stop_ = broker_.count("fetch") >= 2; }));
  const auto reports = broker_.reports();
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].job_id, "j-2");
  EXPECT_EQ(reports[0].body["error"]["code"], "devices_busy");
  EXPECT_EQ(reports[0].body["requeue"], true);
  EXPECT_EQ(reports[1].job_id, "j-1");
  EXPECT_EQ(reports[1].body["error"]["code"], "worker_shutdown");
  std::vector<nlohmann::json> fetches;
  for (const auto& c : broker_.calls)
    if (c.what == "fetch") fetches.push_back(c.body);
  ASSERT_GE(fetches.size(), 2u);
  EXPECT_EQ(fetches[0]["capabilities"]["devices"][0]["in_use"], false);
  EXPECT_EQ(fetches[1]["capabilities"]["devices"][0]["in_use"], true);
  EXPECT_EQ(fetches[1]["capabilities"]["devices"][1]["in_use"], true);
  EXPECT_EQ(fetches[1]["capabilities"]["devices"][2]["in_use"], false);
  EXPECT_EQ(fetches[1]["count"], 1);
}

TEST_F(AgentTest, PreemptDirectiveCheckpointsThenReleasesWithRequeue) {
  config_.commands["train"] = shell_command(
      R"sh(trap 'echo "{\"epoch\":2,\"step\":50,\"loss\":0.5,\"storage_key\":\"s3://b/ck/2\"}" > "$OJS_CHECKPOINT_FILE"; exit 0' TERM; )sh"
      R"sh(while :; do sleep 0.05; done)sh");
  options_.heartbeat_interval_s = 0.2;
  broker_.fetch_replies.push_back(jobs_reply({job("j-train", "train")}));
  broker_.heartbeat_replies.push_back({200, {{"state", "running"}}, ""});  // the first beat, before the job
  broker_.heartbeat_replies.push_back(
      {200,
       {{"state", "running"},
        {"directive", ""},
        {"job_directives",
         {{{"job_id", "j-train"}, {"action", "preempt"}, {"grace_period_s", 5}, {"checkpoint", true},
           {"deadline", "2030-01-01T00:00:00Z"}}}}},
       ""});
  auto agent = make_agent();
  ASSERT_TRUE(run(agent));
  const auto reports = broker_.reports();
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].what, "checkpoint");
  EXPECT_EQ(reports[0].job_id, "j-train");
  EXPECT_EQ(reports[0].body["epoch"], 2);
  EXPECT_EQ(reports[0].body["storage_key"], "s3://b/ck/2");
  EXPECT_EQ(reports[1].what, "nack");
  EXPECT_EQ(reports[1].body["requeue"], true);
  EXPECT_EQ(reports[1].body["error"]["code"], "preempted");
}

TEST_F(AgentTest, CheckpointsWrittenWhileRunningAreCommitted) {
  config_.commands["train"] = shell_command(
      R"sh(echo '{"epoch":1,"step":10}' > c.tmp && mv c.tmp "$OJS_CHECKPOINT_FILE"; sleep 0.4; )sh"
      R"sh(echo '{"epoch":2,"step":20}' > c.tmp && mv c.tmp "$OJS_CHECKPOINT_FILE"; sleep 0.4; echo '{"final":true}')sh");
  broker_.fetch_replies.push_back(jobs_reply({job("j-train", "train")}));
  auto agent = make_agent();
  ASSERT_TRUE(run(agent));
  const auto reports = broker_.reports();
  ASSERT_EQ(reports.size(), 3u);
  EXPECT_EQ(reports[0].body["epoch"], 1);
  EXPECT_EQ(reports[1].body["epoch"], 2);
  EXPECT_EQ(reports[2].what, "ack");
}

TEST_F(AgentTest, ShutdownDrainsThenReleasesRunningJobs) {
  config_.drain_timeout_s = 0.3;
  options_.once = false;
  broker_.fetch_replies.push_back(jobs_reply({job("j-long", "sleep")}));
  auto agent = make_agent();
  ASSERT_TRUE(run(agent, 10s, [&] {
    if (agent.active_jobs() == 1) stop_ = true;
  }));
  const auto reports = broker_.reports();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].body["requeue"], true);
  EXPECT_EQ(reports[0].body["error"]["code"], "worker_shutdown");
  const auto fetches_at_stop = broker_.count("fetch");
  EXPECT_EQ(fetches_at_stop, 1u);  // draining never fetches
}

TEST_F(AgentTest, TerminateDirectiveDrainsLikeShutdown) {
  options_.once = false;
  broker_.fetch_replies.push_back(jobs_reply({job("j-ok", "ok")}, {{"directive", "terminate"}, {"state", "terminate"}}));
  auto agent = make_agent();
  ASSERT_TRUE(run(agent));
  ASSERT_EQ(broker_.reports().size(), 1u);
  EXPECT_EQ(broker_.reports()[0].what, "ack");  // the running job was allowed to finish
  EXPECT_EQ(broker_.count("fetch"), 1u);
}

TEST_F(AgentTest, QuietDirectiveStopsFetchingOnly) {
  options_.once = false;
  options_.heartbeat_interval_s = 0.05;
  for (int i = 0; i < 100; ++i)  // the broker keeps saying quiet until an admin resumes the worker
    broker_.heartbeat_replies.push_back({200, {{"state", "quiet"}, {"directive", "quiet"}}, ""});
  auto agent = make_agent();
  const auto deadline = SteadyClock::now() + 300ms;
  while (SteadyClock::now() < deadline) {
    agent.turn(SteadyClock::now());
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(broker_.count("fetch"), 0u);  // the first beat, before any fetch, said quiet
  EXPECT_GT(broker_.count("heartbeat"), 1u);
}

TEST_F(AgentTest, UnreachableBrokerIsRetriedWithBackoff) {
  broker_.fetch_replies.push_back({0, nullptr, "connection refused"});
  broker_.fetch_replies.push_back({503, nullptr, ""});
  broker_.fetch_replies.push_back(jobs_reply({job("j-ok", "ok")}));
  auto agent = make_agent();
  ASSERT_TRUE(run(agent));
  EXPECT_GE(broker_.count("fetch"), 4u);  // two failures, the job, then the empty queue
  ASSERT_EQ(broker_.reports().size(), 1u);
  EXPECT_EQ(broker_.reports()[0].what, "ack");
}

TEST(Backoff, GrowsWithJitterUpToTheCap) {
  ExponentialBackoff backoff(std::chrono::milliseconds(100), std::chrono::milliseconds(1000), 7);
  EXPECT_LE(backoff.next_delay().count(), 100);
  EXPECT_LE(backoff.next_delay().count(), 200);
  for (int i = 0; i < 30; ++i) EXPECT_LE(backoff.next_delay().count(), 1000);
  backoff.reset();
  EXPECT_LE(backoff.next_delay().count(), 100);
}

// Full jitter (backoff.hpp): each wait is uniform over [0, ceiling], so the waits of
// many workers cover the whole window, its lower half included (equal jitter, which
// the header did not promise, never goes below ceiling / 2).
TEST(Backoff, FullJitterSpreadsOverTheWholeWindow) {
  for (unsigned failures = 0; failures < 6; ++failures) {
    const long long ceiling = std::min(1000LL, 100LL << failures);
    long long low = ceiling, high = 0, below_half = 0;
    for (std::mt19937::result_type seed = 1; seed <= 2000; ++seed) {
      ExponentialBackoff backoff(std::chrono::milliseconds(100), std::chrono::milliseconds(1000), seed);
      for (unsigned i = 0; i < failures; ++i) backoff.next_delay();
      const long long d = backoff.next_delay().count();
      low = std::min(low, d);
      high = std::max(high, d);
      below_half += d < ceiling / 2;
    }
    EXPECT_GE(low, 0) << failures;
    EXPECT_LE(high, ceiling) << failures;
    EXPECT_LT(low, ceiling / 10) << failures << ": the window starts at 0";
    EXPECT_GT(high, ceiling * 9 / 10) << failures << ": and ends at the ceiling";
    EXPECT_GT(below_half, 800) << failures << ": about half the waits in the lower half";
    EXPECT_LT(below_half, 1200) << failures;
  }
}

TEST(Directives, ReadsWorkerStateAndPreemptions) {
  const auto d = read_directives(nlohmann::json::parse(R"({"state": "running", "directive": "", "job_directives": [
      {"job_id": "a", "action": "preempt", "grace_period_s": 12, "checkpoint": true, "deadline": "2030-01-01T00:00:00Z"},
      {"job_id": "b", "action": "something-new"}]})"));
  ASSERT_TRUE(d.worker.has_value());
  EXPECT_EQ(*d.worker, WorkerDirective::running);
  ASSERT_EQ(d.preemptions.size(), 1u);
  EXPECT_EQ(d.preemptions[0].job_id, "a");
  EXPECT_DOUBLE_EQ(d.preemptions[0].grace_period_s, 12);
  EXPECT_TRUE(d.preemptions[0].checkpoint);
  EXPECT_EQ(*read_directives({{"state", "running"}, {"directive", "quiet"}}).worker, WorkerDirective::quiet);
  EXPECT_FALSE(read_directives(nlohmann::json::object()).worker.has_value());
}

TEST(Directives, ReadsCancelAndKill) {
  const auto d = read_directives(nlohmann::json::parse(R"({"job_directives": [
      {"job_id": "c", "action": "cancel"}, {"job_id": "k", "action": "kill"}, {"job_id": 7, "action": "kill"}]})"));
  ASSERT_EQ(d.stops.size(), 2u);
  EXPECT_EQ(d.stops[0].job_id, "c");
  EXPECT_FALSE(d.stops[0].kill);
  EXPECT_EQ(d.stops[1].job_id, "k");
  EXPECT_TRUE(d.stops[1].kill);
  EXPECT_TRUE(d.preemptions.empty());
}

// A cancel reaches the process: SIGTERM (its trap runs), and the NACK that follows
// says "cancelled" whatever the exit status: the broker's cue that the process is gone.
TEST_F(AgentTest, CancelDirectiveTerminatesTheJobAndReportsItGone) {
  config_.commands["hold"] = shell_command(R"sh(trap 'echo term > "$OJS_WORK_DIR/../term-$OJS_JOB_ID"; exit 0' TERM; while :; do sleep 0.05; done)sh");
  options_.heartbeat_interval_s = 0.2;
  broker_.fetch_replies.push_back(jobs_reply({job("j-c", "hold", {{"ext_ml_preemption_grace_period_s", 60}})}));
  broker_.heartbeat_replies.push_back({200, {{"state", "running"}}, ""});
  for (int i = 0; i < 3; ++i)  // told on every contact until the report lands
    broker_.heartbeat_replies.push_back({200, {{"state", "running"}, {"job_directives", {{{"job_id", "j-c"}, {"action", "cancel"}}}}}, ""});
  auto agent = make_agent();
  ASSERT_TRUE(run(agent));
  EXPECT_TRUE(std::filesystem::exists(dir_.path() / "term-j-c")) << "SIGTERM never reached the job";
  const auto reports = broker_.reports();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].what, "nack");
  EXPECT_EQ(reports[0].body["error"]["code"], "cancelled");
  EXPECT_FALSE(reports[0].body.contains("requeue"));
}

// kill: SIGKILL at once, even for a job that ignores SIGTERM and has a long grace;
// a cancelled job this worker does not run is reported gone once.
TEST_F(AgentTest, KillDirectiveKillsAtOnceAndAnUnknownJobIsReportedGone) {
  config_.commands["stubborn"] = shell_command(R"sh(trap '' TERM; while :; do sleep 0.05; done)sh");
  options_.heartbeat_interval_s = 0.2;
  broker_.fetch_replies.push_back(jobs_reply({job("j-k", "stubborn", {{"ext_ml_preemption_grace_period_s", 600}})}));
  broker_.heartbeat_replies.push_back({200, {{"state", "running"}}, ""});
  const nlohmann::json stops = {{{"job_id", "j-k"}, {"action", "kill"}}, {{"job_id", "j-elsewhere"}, {"action", "cancel"}}};
  for (int i = 0; i < 3; ++i) broker_.heartbeat_replies.push_back({200, {{"state", "running"}, {"job_directives", stops}}, ""});
  auto agent = make_agent();
  ASSERT_TRUE(run(agent, 20s));
  std::map<std::string, std::vector<nlohmann::json>> by_job;
  for (const auto& r : broker_.reports()) by_job[r.job_id].push_back(r.body);
  ASSERT_EQ(by_job["j-k"].size(), 1u);
  EXPECT_EQ(by_job["j-k"][0]["error"]["code"], "cancelled");
  EXPECT_EQ(by_job["j-k"][0]["error"]["details"]["signal"], SIGKILL);
  ASSERT_EQ(by_job["j-elsewhere"].size(), 1u) << "a job not run here is reported gone once, not on every contact";
  EXPECT_EQ(by_job["j-elsewhere"][0]["error"]["code"], "cancelled");
}

// On an MPS-shared device the job's declared GPU memory is its cap there
// (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT, by the ordinal its CUDA sees); a job that
// declares none gets the device's fair share, as the broker charges it.
TEST_F(AgentTest, MpsSharedDeviceCapsTheJobsMemory) {
  config_.commands["mps"] = shell_command(
      R"(printf '{"limit":"%s","threads":"%s"}' "$CUDA_MPS_PINNED_DEVICE_MEM_LIMIT" "$CUDA_MPS_ACTIVE_THREAD_PERCENTAGE")");
  broker_.fetch_replies.push_back(jobs_reply({job("j-25", "mps", {{"ext_ml_assigned_devices", {1}}, {"ext_ml_gpu_count", 1},
                                                                 {"ext_ml_gpu_memory_gb", 25}}),
                                              job("j-any", "mps", {{"ext_ml_assigned_devices", {1}}})}));
  config_.concurrency = 1;
  auto agent = make_agent({{"accelerator", "gpu"},
                           {"devices", {{{"index", 0}, {"memory_gb", 80}},
                                        {{"index", 1}, {"memory_gb", 80}, {"sharing", "mps"}, {"mps_active_thread_percentage", 50}, {"max_jobs", 2}}}}});
  ASSERT_TRUE(run(agent, 20s));
  std::map<std::string, nlohmann::json> results;
  for (const auto& r : broker_.reports()) results[r.job_id] = r.body["result"];
  EXPECT_EQ(results["j-25"]["limit"], "0=23841MB");  // 25 GB = 23841.8 MiB, rounded down
  EXPECT_EQ(results["j-25"]["threads"], "50");
  EXPECT_EQ(results["j-any"]["limit"], "0=38146MB");  // 80 GB / 2 jobs
}

// The job learns where its checkpoints go and how often; under a file:// URI the
// agent deletes those beyond max_count once a new one is committed.
TEST_F(AgentTest, CheckpointUriIntervalAndFileRetention) {
  const auto store = dir_.path() / "ckpt";
  std::filesystem::create_directories(store);
  config_.commands["train"] = shell_command(
      R"sh(for s in 1 2 3 4; do mkdir -p "${OJS_CHECKPOINT_URI#file://}step-$s"; touch -d "@$((1700000000 + s))" "${OJS_CHECKPOINT_URI#file://}step-$s"; done; )sh"
      R"sh(echo '{"step":4}' > c.tmp && mv c.tmp "$OJS_CHECKPOINT_FILE"; sleep 0.5; )sh"
      R"sh(printf '{"uri":"%s","interval":"%s","max":"%s"}' "$OJS_CHECKPOINT_URI" "$OJS_CHECKPOINT_INTERVAL_S" "$OJS_CHECKPOINT_MAX_COUNT")sh");
  const std::string uri = "file://" + store.string() + "/";
  broker_.fetch_replies.push_back(jobs_reply({job("j-ck", "train", {{"ext_ml_checkpoint_enabled", true}, {"ext_ml_checkpoint_interval_s", 60},
                                                                    {"ext_ml_checkpoint_max_count", 2}, {"ext_ml_checkpoint_storage_uri", uri}})}));
  auto agent = make_agent();
  ASSERT_TRUE(run(agent, 20s));
  const auto reports = broker_.reports();
  ASSERT_FALSE(reports.empty());
  EXPECT_EQ(reports.back().what, "ack");
  EXPECT_EQ(reports.back().body["result"], nlohmann::json({{"uri", uri + "j-ck/"}, {"interval", "60"}, {"max", "2"}}));
  std::vector<std::string> kept;
  for (const auto& e : std::filesystem::directory_iterator(store / "j-ck")) kept.push_back(e.path().filename().string());
  std::sort(kept.begin(), kept.end());
  EXPECT_EQ(kept, (std::vector<std::string>{"step-3", "step-4"}));
}

// A job that commits four checkpoints, 0.3 s apart (the agent polls every 0.1 s),
// each with the storage_key a training loop writes to an object store.
CommandSpec object_store_training(const std::string& first_key) {
  return shell_command(
      "for s in 1 2 3 4; do key=\"${OJS_CHECKPOINT_URI}step-$s/\"; [ $s = 1 ] && key='" + first_key + "'; "
      R"sh(printf '{"step":%s,"storage_key":"%s"}' $s "$key" > c.tmp && mv c.tmp "$OJS_CHECKPOINT_FILE"; sleep 0.3; done; )sh"
      "echo '{}'");
}

// Under s3:// the agent cannot list the store: the operator's command gets each URI
// beyond max_count, once, as its last argument; a key outside the job's own prefix
// is never passed (a job cannot have the agent delete what is not its own).
TEST_F(AgentTest, CheckpointRetentionCommandGetsEachUriBeyondMaxCount) {
  const auto calls = dir_.path() / "calls.log";
  config_.checkpoint_retention_command = {"sh", "-c", "echo \"$*\" >> " + calls.string(), "rm-hook", "--recursive"};
  config_.commands["train"] = object_store_training("s3://bucket/other-job/step-1/");
  broker_.fetch_replies.push_back(jobs_reply({job("j-s3", "train", {{"ext_ml_checkpoint_enabled", true}, {"ext_ml_checkpoint_max_count", 2},
                                                                    {"ext_ml_checkpoint_storage_uri", "s3://bucket/ckpt/"}}),
                                              job("j-kept", "train", {{"ext_ml_checkpoint_enabled", true}, {"ext_ml_checkpoint_max_count", 2},
                                                                      {"ext_ml_checkpoint_storage_uri", "s3://bucket/ckpt/"},
                                                                      {"checkpoints", {{{"storage_key", "s3://bucket/ckpt/j-kept/step-0/"}}}}})}));
  auto agent = make_agent();
  ASSERT_TRUE(run(agent, 20s));
  std::vector<std::string> lines;
  std::ifstream in(calls);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::sort(lines.begin(), lines.end());
  EXPECT_EQ(lines, (std::vector<std::string>{"--recursive s3://bucket/ckpt/j-kept/step-0/", "--recursive s3://bucket/ckpt/j-kept/step-2/",
                                             "--recursive s3://bucket/ckpt/j-s3/step-2/"}));
  EXPECT_EQ(broker_.count("ack"), 2u);
}

// A command that hangs is killed at its timeout and one that fails is logged; neither
// holds up the job: it is reported while the hung deletion still runs.
TEST_F(AgentTest, AHungOrFailingRetentionCommandNeitherBlocksNorFailsTheJob) {
  const auto started = dir_.path() / "started.log", hung = dir_.path() / "hung.pid";
  config_.checkpoint_retention_command = {
      "sh", "-c",
      "echo \"$1\" >> " + started.string() + "; case \"$1\" in *step-1/) echo $$ > " + hung.string() +
          "; sleep 30; echo finished >> " + started.string() + ";; *) echo 'AccessDenied' >&2; exit 7;; esac",
      "rm-hook"};
  config_.checkpoint_retention_timeout_s = 4;
  config_.commands["train"] = object_store_training("step-1/");  // a key relative to the job's prefix
  broker_.fetch_replies.push_back(jobs_reply({job("j-slow", "train", {{"ext_ml_checkpoint_enabled", true}, {"ext_ml_checkpoint_max_count", 2},
                                                                      {"ext_ml_checkpoint_storage_uri", "gs://bucket/ckpt/"}})}));
  auto agent = make_agent();
  bool hung_alive_at_report = false;
  const auto began = SteadyClock::now();
  ASSERT_TRUE(run(agent, 20s, [&] {
    if (broker_.count("ack") == 0 || hung_alive_at_report) return;
    std::ifstream pid_file(hung);
    pid_t pid = 0;
    hung_alive_at_report = (pid_file >> pid) && pid > 0 && ::kill(pid, 0) == 0;
  }));
  EXPECT_LT(SteadyClock::now() - began, 15s);  // not the 30 s the hung command sleeps
  EXPECT_TRUE(hung_alive_at_report);
  ASSERT_EQ(broker_.count("ack"), 1u);
  EXPECT_EQ(broker_.count("nack"), 0u);
  std::vector<std::string> lines;
  std::ifstream in(started);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  EXPECT_EQ(lines, (std::vector<std::string>{"gs://bucket/ckpt/j-slow/step-1/", "gs://bucket/ckpt/j-slow/step-2/"}));
}

// Two devices of GPU 1 are MIG slices (parent_index 1); GPU 0 is whole.
nlohmann::json mig_capabilities() {
  return {{"accelerator", "gpu"},
          {"devices",
           {{{"index", 0}, {"uuid", "GPU-0"}},
            {{"index", 2}, {"uuid", "MIG-a"}, {"parent_index", 1}, {"mig_profile", "1g.10gb"}, {"compute_fraction", 0.142}},
            {{"index", 3}, {"uuid", "MIG-b"}, {"parent_index", 1}, {"mig_profile", "1g.10gb"}, {"compute_fraction", 0.142}}}}};
}

TEST_F(AgentTest, MigDevicesAreMadeVisibleByUuid) {
  config_.commands["env"] = shell_command(R"(printf '{"cvd": "%s"}' "$CUDA_VISIBLE_DEVICES")");
  broker_.fetch_replies.push_back(jobs_reply({job("j-mig", "env", {{"ext_ml_assigned_devices", {3}}}),
                                              job("j-whole", "env", {{"ext_ml_assigned_devices", {0}}})}));
  auto agent = make_agent(mig_capabilities());
  ASSERT_TRUE(run(agent));
  std::map<std::string, std::string> visible;
  for (const auto& r : broker_.reports()) visible[r.job_id] = r.body["result"].value("cvd", "?");
  EXPECT_EQ(visible["j-mig"], "MIG-b");
  EXPECT_EQ(visible["j-whole"], "0");
}

TEST_F(AgentTest, XidFaultMarksTheGpuUnhealthyAdvertisesWhyAndRefusesItsDevices) {
  DeviceFaults faults;
  options_.device_faults = &faults;
  options_.heartbeat_interval_s = 3600;  // only the fault may trigger the second heartbeat
  options_.once = false;
  auto agent = make_agent(mig_capabilities());
  ASSERT_TRUE(agent.turn(SteadyClock::now()));  // first heartbeat + fetch: all healthy
  ASSERT_EQ(broker_.count("heartbeat"), 1u);
  EXPECT_TRUE(broker_.calls.at(0).body["capabilities"]["devices"][1].value("healthy", true));

  faults.post({1, 79, "xid 79: GPU has fallen off the bus"});
  // A job the broker assigned before it heard of the fault is refused, not run.
  broker_.fetch_replies.push_back(jobs_reply({job("j-late", "ok", {{"ext_ml_assigned_devices", {2}}})}));
  ASSERT_TRUE(run(agent, 10s, [&] { stop_ = broker_.count("fetch") >= 3; }));

  ASSERT_GE(broker_.count("heartbeat"), 2u);  // sent at once, not after the hour
  nlohmann::json advertised;
  for (const auto& c : broker_.calls)
    if (c.what == "heartbeat") advertised = c.body["capabilities"]["devices"];
  EXPECT_TRUE(advertised[0].value("healthy", true));  // GPU 0 is another GPU
  for (const int i : {1, 2}) {
    EXPECT_EQ(advertised[i]["healthy"], false) << advertised.dump();
    EXPECT_EQ(advertised[i]["health_reason"], "xid 79: GPU has fallen off the bus");
  }
  nlohmann::json last_fetch;
  for (const auto& c : broker_.calls)
    if (c.what == "fetch") last_fetch = c.body;
  EXPECT_EQ(last_fetch["capabilities"]["devices"][2]["healthy"], false);
  const auto reports = broker_.reports();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].job_id, "j-late");
  EXPECT_EQ(reports[0].body["error"]["code"], "device_unhealthy");
  EXPECT_EQ(reports[0].body["requeue"], true);
}

TEST_F(AgentTest, FatalXidStopsTheJobOnItsGpuAsGpuFaultAndWarningsAreCounted) {
  DeviceFaults faults;
  options_.device_faults = &faults;
  options_.once = false;
  config_.drain_timeout_s = 0;
  broker_.fetch_replies.push_back(jobs_reply({job("j-on-1", "sleep", {{"ext_ml_assigned_devices", {2}}}),
                                              job("j-on-0", "sleep", {{"ext_ml_assigned_devices", {0}}})}));
  auto agent = make_agent(mig_capabilities());
  ASSERT_FALSE(run(agent, 300ms));  // both started
  ASSERT_EQ(agent.active_jobs(), 2u);
  faults.post({0, 94, "xid 94: contained ECC error (only the affected application was stopped)", false});
  faults.post({1, 79, "xid 79: GPU has fallen off the bus"});
  ASSERT_TRUE(run(agent, 10s, [&] { stop_ = !broker_.reports().empty(); }));
  const auto reports = broker_.reports();
  ASSERT_EQ(reports.size(), 2u);  // j-on-1 stopped for the fault, j-on-0 released by the stop
  for (const auto& r : reports)
    if (r.job_id == "j-on-1") {
      EXPECT_EQ(r.body["error"]["code"], "gpu_fault");
      EXPECT_EQ(r.body["error"]["type"], "gpu_fault");
      EXPECT_EQ(r.body["error"]["message"], "job stopped: xid 79: GPU has fallen off the bus on GPU 1");
      EXPECT_EQ(r.body["requeue"], true);
    } else {
      EXPECT_EQ(r.body["error"]["code"], "worker_shutdown");
    }
  nlohmann::json advertised;
  for (const auto& c : broker_.calls)
    if (c.what == "heartbeat") advertised = c.body["capabilities"]["devices"];
  EXPECT_EQ(advertised[0]["xid_warnings"], 1) << advertised.dump();
  EXPECT_TRUE(advertised[0].value("healthy", true));
}

TEST_F(AgentTest, MpsSharedDeviceRunsUpToMaxJobsWithTheirThreadShare) {
  config_.drain_timeout_s = 0;
  config_.concurrency = 3;
  config_.commands["mps"] = shell_command(R"(echo "$CUDA_MPS_ACTIVE_THREAD_PERCENTAGE" > "$OJS_WORK_DIR/../mps-$OJS_JOB_ID"; sleep 30)");
  broker_.fetch_replies.push_back(jobs_reply({job("j-1", "mps", {{"ext_ml_assigned_devices", {0}}}),
                                              job("j-2", "mps", {{"ext_ml_assigned_devices", {0}}}),
                                              job("j-3", "ok", {{"ext_ml_assigned_devices", {0}}})}));
  auto agent = make_agent({{"accelerator", "gpu"},
                           {"devices", {{{"index", 0}, {"sharing", "mps"}, {"mps_active_thread_percentage", 50}, {"max_jobs", 2}}}}});
  // Stop once both have written their share: they run side by side.
  ASSERT_TRUE(run(agent, 20s, [&] {
    stop_ = broker_.count("fetch") >= 2 && std::filesystem::exists(dir_.path() / "mps-j-1") &&
            std::filesystem::exists(dir_.path() / "mps-j-2");
  }));
  std::map<std::string, std::string> codes;
  for (const auto& r : broker_.reports()) codes[r.job_id] = r.body["error"].value("code", "");
  EXPECT_EQ(codes["j-3"], "devices_busy");  // a third job on a device shared by two
  EXPECT_EQ(codes["j-1"], "worker_shutdown");
  EXPECT_EQ(codes["j-2"], "worker_shutdown");
  for (const char* id : {"j-1", "j-2"}) {
    std::ifstream share(dir_.path() / (std::string("mps-") + id));
    std::string value;
    share >> value;
    EXPECT_EQ(value, "50") << id;
  }
}

// The ACK of a finished job asks for the next one (ACK with fetch): the job it
// hands back runs without a FETCH of its own.
TEST_F(AgentTest, AckCarriesTheNextFetchAndItsJobRuns) {
  config_.concurrency = 1;
  broker_.fetch_replies.push_back(jobs_reply({job("j1", "ok")}));
  broker_.fetch_parts.push_back({{"jobs", {job("j2", "ok")}}, {"state", "running"}});
  auto agent = make_agent();
  ASSERT_TRUE(run(agent));
  const auto reports = broker_.reports();
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].job_id, "j1");
  ASSERT_TRUE(reports[0].body.contains("fetch")) << reports[0].body.dump();
  EXPECT_EQ(reports[0].body["fetch"]["count"], 1);
  EXPECT_EQ(reports[0].body["fetch"]["worker_id"], "w-test");
  EXPECT_EQ(reports[0].body["fetch"]["queues"], nlohmann::json({"default", "gpu"}));
  EXPECT_EQ(reports[1].job_id, "j2");
  EXPECT_EQ(reports[1].what, "ack");
  // j1 came from a FETCH, j2 from j1's ACK; then j2's ACK found the queue empty (no
  // `fetch` part: a FETCH of its own tells the --once agent the queue is drained).
  std::vector<std::string> order;
  for (const auto& c : broker_.calls)
    if (c.what != "heartbeat") order.push_back(c.what + (c.job_id.empty() ? "" : ":" + c.job_id));
  EXPECT_EQ(order, (std::vector<std::string>{"fetch", "ack:j1", "ack:j2", "fetch"}));
}

// A broker that refuses the fetch part for good (400) still gets the report, alone.
TEST_F(AgentTest, AReportRefusedWithItsFetchIsSentAgainAlone) {
  config_.concurrency = 1;
  broker_.fetch_replies.push_back(jobs_reply({job("j1", "ok")}));
  broker_.report_replies.push_back({400, {{"error", {{"code", "invalid_request"}, {"details", {{"field", "fetch.queues"}}}}}}, ""});
  auto agent = make_agent();
  ASSERT_TRUE(run(agent));
  const auto reports = broker_.reports();
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].job_id, "j1");
  EXPECT_TRUE(reports[0].body.contains("fetch"));
  EXPECT_EQ(reports[1].job_id, "j1");
  EXPECT_FALSE(reports[1].body.contains("fetch"));
}

// The fetch part failed: the ACK stands, fetching waits as after a failed FETCH.
TEST_F(AgentTest, AFailedFetchPartBacksOffLikeAFailedFetch) {
  config_.concurrency = 1;
  options_.once = false;
  options_.poll_interval = 0ms;  // an empty fetch part would be followed by a FETCH at once
  broker_.fetch_replies.push_back(jobs_reply({job("j1", "ok")}));
  // Not retryable: the agent waits 5 s (a retryable error's full-jitter backoff may be ~0).
  broker_.fetch_parts.push_back({{"jobs", nlohmann::json::array()},
                                 {"error", {{"code", "forbidden"}, {"message", "no new work"}, {"retryable", false}}}});
  auto agent = make_agent();
  const auto give_up = SteadyClock::now() + 10s;
  while (broker_.reports().empty() && SteadyClock::now() < give_up) {
    agent.turn(SteadyClock::now());
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_EQ(broker_.reports().size(), 1u);
  const auto fetches = broker_.count("fetch");
  agent.turn(SteadyClock::now());  // within the wait: no FETCH at once
  EXPECT_EQ(broker_.count("fetch"), fetches);
  EXPECT_EQ(agent.active_jobs(), 0u);
}

}  // namespace
}  // namespace ojs::worker

namespace ojs::worker {
namespace {

// A member of an elastic gang: when a heartbeat says its gang has a newer generation,
// the process is stopped (grace, checkpoint committed) and started again in the same
// directory with the new rank, world size and generation and the checkpoint as
// $OJS_LAST_CHECKPOINT; nothing is reported in between.
TEST_F(AgentTest, ANewGangGenerationRestartsTheMemberFromItsCheckpointAtTheNewSize) {
  const auto starts = dir_.path() / "starts.log";
  config_.commands["train"] = shell_command(
      "echo \"$OJS_GANG_GENERATION $WORLD_SIZE $RANK $TORCHELASTIC_RESTART_COUNT $OJS_LAST_CHECKPOINT\" >> " + starts.string() +
      R"sh(; if [ "$OJS_GANG_GENERATION" = 2 ]; then echo '{"done":true}'; exit 0; fi; )sh"
      R"sh(trap 'echo "{\"epoch\":3}" > "$OJS_CHECKPOINT_FILE"; exit 0' TERM; while :; do sleep 0.05; done)sh");
  options_.heartbeat_interval_s = 0.2;
  const nlohmann::json gang = {{"ext_ml_gang_rank", 0}, {"ext_ml_gang_world_size", 2}, {"ext_ml_gang_generation", 1},
                               {"ext_ml_gang_master_addr", "10.0.0.1"}, {"ext_ml_gang_master_port", 29500},
                               {"ext_ml_preemption_grace_period_s", 5}};
  broker_.fetch_replies.push_back(jobs_reply({job("j-el", "train", gang)}));
  broker_.heartbeat_replies.push_back({200, {{"state", "running"}}, ""});  // the first beat, before the job
  nlohmann::json next = gang;
  next.erase("ext_ml_preemption_grace_period_s");
  next["job_id"] = "j-el";
  next["ext_ml_gang_world_size"] = 3;
  next["ext_ml_gang_generation"] = 2;
  broker_.heartbeat_replies.push_back({200, {{"state", "running"}, {"gangs", {next}}}, ""});
  auto agent = make_agent();
  ASSERT_TRUE(run(agent));

  std::ifstream in(starts);
  std::string first, second, extra;
  std::getline(in, first);
  std::getline(in, second);
  EXPECT_EQ(first, "1 2 0 0 ");
  EXPECT_EQ(second, R"(2 3 0 1 {"epoch":3})");
  EXPECT_FALSE(std::getline(in, extra)) << extra;
  const auto reports = broker_.reports();
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].what, "checkpoint");
  EXPECT_EQ(reports[0].body["epoch"], 3);
  EXPECT_EQ(reports[1].what, "ack") << reports[1].body.dump();
  EXPECT_EQ(reports[1].body["result"]["done"], true);
}

// A FETCH reply carries the member's gangs as a heartbeat's does: a newer generation
// there restarts the member without waiting for the next heartbeat.
TEST_F(AgentTest, ANewGangGenerationInAFetchReplyRestartsTheMember) {
  const auto starts = dir_.path() / "starts.log";
  config_.commands["train"] = shell_command(
      "echo \"$OJS_GANG_GENERATION $WORLD_SIZE\" >> " + starts.string() +
      R"sh(; if [ "$OJS_GANG_GENERATION" = 2 ]; then echo '{"done":true}'; exit 0; fi; )sh"
      R"sh(trap 'exit 0' TERM; while :; do sleep 0.05; done)sh");
  options_.heartbeat_interval_s = 600;  // no heartbeat carries the new generation
  const nlohmann::json gang = {{"ext_ml_gang_rank", 0}, {"ext_ml_gang_world_size", 2}, {"ext_ml_gang_generation", 1},
                               {"ext_ml_gang_master_addr", "10.0.0.1"}, {"ext_ml_gang_master_port", 29500},
                               {"ext_ml_preemption_grace_period_s", 5}};
  broker_.fetch_replies.push_back(jobs_reply({job("j-el", "train", gang)}));
  nlohmann::json next = gang;
  next.erase("ext_ml_preemption_grace_period_s");
  next["job_id"] = "j-el";
  next["ext_ml_gang_world_size"] = 3;
  next["ext_ml_gang_generation"] = 2;
  broker_.fetch_replies.push_back(jobs_reply(nlohmann::json::array(), {{"gangs", {next}}}));
  auto agent = make_agent();
  ASSERT_TRUE(run(agent));

  std::ifstream in(starts);
  std::string first, second;
  std::getline(in, first);
  std::getline(in, second);
  EXPECT_EQ(first, "1 2");
  EXPECT_EQ(second, "2 3");
  const auto reports = broker_.reports();
  ASSERT_FALSE(reports.empty());
  EXPECT_EQ(reports.back().what, "ack") << reports.back().body.dump();
}

// A heartbeat that repeats the generation the member runs changes nothing.
TEST_F(AgentTest, TheSameGangGenerationLeavesTheMemberRunning) {
  config_.commands["train"] = shell_command("sleep 0.6; echo '{\"done\":true}'");
  options_.heartbeat_interval_s = 0.1;
  const nlohmann::json gang = {{"ext_ml_gang_rank", 1}, {"ext_ml_gang_world_size", 2}, {"ext_ml_gang_generation", 1},
                               {"ext_ml_gang_master_addr", "10.0.0.1"}, {"ext_ml_gang_master_port", 29500}};
  broker_.fetch_replies.push_back(jobs_reply({job("j-el", "train", gang)}));
  nlohmann::json same = gang;
  same["job_id"] = "j-el";
  for (int i = 0; i < 5; ++i) broker_.heartbeat_replies.push_back({200, {{"state", "running"}, {"gangs", {same}}}, ""});
  auto agent = make_agent();
  ASSERT_TRUE(run(agent));
  const auto reports = broker_.reports();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].what, "ack");
}

}  // namespace
}  // namespace ojs::worker
