#include "worker/config/json_file.hpp"
#include "worker/execution/job_environment.hpp"
#include "worker/execution/job_execution.hpp"
#include "test_helpers.hpp"

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <thread>

namespace ojs::worker {
namespace {

using namespace std::chrono_literals;

nlohmann::json make_job(nlohmann::json extra = nlohmann::json::object()) {
  nlohmann::json job = {{"id", "019414d4-8b2e-7c3a-b5d1-f0e2a3b4c5d6"},
                        {"type", "ml.test"},
                        {"queue", "default"},
                        {"attempt", 2},
                        {"args", {1, 2}}};
  job.update(extra);
  return job;
}

class JobExecutionTest : public ::testing::Test {
 protected:
  testing::ScratchDir dir_{"exec"};
  ExecutionSettings settings_{dir_.path(), 0, 1.0};

  std::unique_ptr<JobExecution> start(const std::string& shell, const nlohmann::json& job = make_job()) {
    return JobExecution::start(job, read_job(job), shell_command(shell), settings_);
  }

  // Waits until the job's script has written `name` in its workspace: signal
  // traps are set only once the shell runs, which on a loaded machine can take
  // longer than a short timeout or grace. The agent enforces both when it polls.
  static void wait_for_file(JobExecution& execution, const char* name) {
    const auto file = execution.workspace().dir / name;
    const auto give_up = SteadyClock::now() + 60s;
    while (!std::filesystem::exists(file) && SteadyClock::now() < give_up) std::this_thread::sleep_for(10ms);
    ASSERT_TRUE(std::filesystem::exists(file)) << "the job never wrote " << name;
  }

  // Polls like the agent loop does, giving up after `limit`.
  static JobOutcome run_to_end(JobExecution& execution, std::chrono::milliseconds limit = 10s) {
    const auto give_up = SteadyClock::now() + limit;
    while (SteadyClock::now() < give_up) {
      if (auto outcome = execution.poll()) return *outcome;
      std::this_thread::sleep_for(20ms);
    }
    ADD_FAILURE() << "job did not finish";
    return {};
  }
};

TEST_F(JobExecutionTest, NonZeroExitIsExitCodeError) {
  auto execution = start("echo boom >&2; exit 3");
  const auto outcome = run_to_end(*execution);
  EXPECT_EQ(outcome.kind, JobOutcome::Kind::failed);
  EXPECT_EQ(outcome.error["code"], "exit_3");
  EXPECT_EQ(outcome.error["details"]["exit_code"], 3);
  EXPECT_EQ(outcome.error["details"]["stderr_tail"], "boom\n");
  EXPECT_FALSE(outcome.requeue);
}

TEST_F(JobExecutionTest, JsonStdoutBecomesTheResult) {
  auto execution = start(R"(echo '{"accuracy": 0.93}')");
  const auto outcome = run_to_end(*execution);
  EXPECT_EQ(outcome.kind, JobOutcome::Kind::succeeded);
  EXPECT_EQ(outcome.result, nlohmann::json({{"accuracy", 0.93}}));
}

TEST_F(JobExecutionTest, PlainStdoutIsWrapped) {
  auto execution = start("echo hello");
  EXPECT_EQ(run_to_end(*execution).result, nlohmann::json({{"stdout", "hello\n"}}));
}

TEST_F(JobExecutionTest, JobSeesItsEnvironmentStdinAndFile) {
  const auto job = make_job({{"ext_ml_assigned_devices", {0, 3}},
                             {"last_checkpoint", {{"epoch", 4}}}});
  auto execution = start(
      R"sh(printf '{"cuda":"%s","id":"%s","attempt":"%s","last":%s,"file_same":%s,"cwd_ok":%s}' )sh"
      R"sh("$CUDA_VISIBLE_DEVICES" "$OJS_JOB_ID" "$OJS_ATTEMPT" "$OJS_LAST_CHECKPOINT" )sh"
      R"sh("$(cat | cmp -s - "$OJS_JOB_FILE" && echo true || echo false)" )sh"
      R"sh("$( [ "$PWD" = "$OJS_WORK_DIR" ] && echo true || echo false)")sh",
      job);
  const auto outcome = run_to_end(*execution);
  ASSERT_EQ(outcome.kind, JobOutcome::Kind::succeeded) << outcome.error.dump();
  EXPECT_EQ(outcome.result["cuda"], "0,3");
  EXPECT_EQ(outcome.result["id"], job["id"]);
  EXPECT_EQ(outcome.result["attempt"], "2");
  EXPECT_EQ(outcome.result["last"], nlohmann::json({{"epoch", 4}}));
  EXPECT_EQ(outcome.result["file_same"], true);
  EXPECT_EQ(outcome.result["cwd_ok"], true);
}

// A gang member's process gets its rank, the world size and the rendezvous.
TEST_F(JobExecutionTest, GangMemberSeesRankWorldSizeAndRendezvous) {
  const auto job = make_job({{"ext_ml_gang_rank", 1}, {"ext_ml_gang_world_size", 2},
                             {"ext_ml_gang_master_addr", "10.0.0.1"}, {"ext_ml_gang_master_port", 29501}});
  auto execution = start(
      R"sh(printf '{"rank":"%s","world":"%s","addr":"%s","port":"%s","local":"%s","ojs_rank":"%s","ojs_world":"%s"}' )sh"
      R"sh("$RANK" "$WORLD_SIZE" "$MASTER_ADDR" "$MASTER_PORT" "$LOCAL_RANK" "$OJS_GANG_RANK" "$OJS_GANG_WORLD_SIZE")sh",
      job);
  const auto outcome = run_to_end(*execution);
  ASSERT_EQ(outcome.kind, JobOutcome::Kind::succeeded) << outcome.error.dump();
  EXPECT_EQ(outcome.result, nlohmann::json({{"rank", "1"}, {"world", "2"}, {"addr", "10.0.0.1"}, {"port", "29501"},
                                            {"local", "0"}, {"ojs_rank", "1"}, {"ojs_world", "2"}}));
}

TEST_F(JobExecutionTest, GangMemberSeesItsGenerationAndTorchelasticNames) {
  const auto job = make_job({{"ext_ml_gang_rank", 2}, {"ext_ml_gang_world_size", 5}, {"ext_ml_gang_generation", 3},
                             {"ext_ml_gang_master_addr", "10.0.0.1"}, {"ext_ml_gang_master_port", 29501}});
  auto execution = start(
      R"sh(printf '{"gen":"%s","restarts":"%s","group":"%s","role":"%s","group_world":"%s","role_world":"%s","run_id":"%s"}' )sh"
      R"sh("$OJS_GANG_GENERATION" "$TORCHELASTIC_RESTART_COUNT" "$GROUP_RANK" "$ROLE_RANK" "$GROUP_WORLD_SIZE" )sh"
      R"sh("$ROLE_WORLD_SIZE" "${TORCHELASTIC_RUN_ID-unset}")sh",
      job);
  const auto outcome = run_to_end(*execution);
  ASSERT_EQ(outcome.kind, JobOutcome::Kind::succeeded) << outcome.error.dump();
  EXPECT_EQ(outcome.result, nlohmann::json({{"gen", "3"}, {"restarts", "2"}, {"group", "2"}, {"role", "2"},
                                            {"group_world", "5"}, {"role_world", "5"}, {"run_id", "unset"}}));
}

TEST_F(JobExecutionTest, NonGangJobGetsNoRendezvous) {
  auto execution = start(R"(printf '{"set":%s}' "${MASTER_ADDR+true}${MASTER_ADDR-false}")");
  EXPECT_EQ(run_to_end(*execution).result, nlohmann::json({{"set", false}}));
}

TEST_F(JobExecutionTest, NoAssignedDevicesHidesAllGpusWithAnInvalidIndexNeverEmpty) {
  const auto job = make_job();
  JobView view = read_job(job);
  view.gpus_managed = true;  // a GPU worker, a CPU job
  auto execution = JobExecution::start(job, view, shell_command(R"(printf '{"value":"%s"}' "$CUDA_VISIBLE_DEVICES")"), settings_);
  EXPECT_EQ(run_to_end(*execution).result, nlohmann::json({{"value", "-1"}}));
}

TEST_F(JobExecutionTest, OperatorsVisibleDevicesStandWhenTheWorkerManagesNone) {
  const std::vector<std::string> inherited{"CUDA_VISIBLE_DEVICES=2,3", "PATH=/usr/bin"};
  const auto job = make_job();
  const JobView view = read_job(job);
  const auto env = job_environment(view, JobWorkspace::create(dir_.path(), view, job), inherited);
  EXPECT_NE(std::find(env.begin(), env.end(), "CUDA_VISIBLE_DEVICES=2,3"), env.end());
}

TEST_F(JobExecutionTest, TimeoutTerminatesTheProcess) {
  const auto job = make_job({{"ext_ml_timeout_seconds", 1}, {"timeout_ms", 60000}});
  const auto started = SteadyClock::now();
  auto execution = start("sleep 5", job);
  const auto outcome = run_to_end(*execution);
  const auto elapsed = SteadyClock::now() - started;
  EXPECT_EQ(outcome.kind, JobOutcome::Kind::failed);
  EXPECT_EQ(outcome.error["code"], "timeout");
  EXPECT_LT(elapsed, 4s);  // killed, not waited for
  EXPECT_GE(elapsed, 900ms);
}

TEST_F(JobExecutionTest, TimeoutEscalatesToSigkillWhenTermIsIgnored) {
  const auto job = make_job({{"timeout_ms", 300}});
  auto execution = start("trap '' TERM; echo ready > ready; sleep 5 & wait; sleep 5", job);
  wait_for_file(*execution, "ready");  // TERM is ignored from here on
  const auto outcome = run_to_end(*execution, 5s);
  EXPECT_EQ(outcome.error["code"], "timeout");
  EXPECT_EQ(outcome.error["details"]["signal"], SIGKILL);
}

TEST_F(JobExecutionTest, KilledBySignalIsSignalError) {
  auto execution = start("kill -KILL $$");
  EXPECT_EQ(run_to_end(*execution).error["code"], "signal_9");
}

TEST_F(JobExecutionTest, MissingProgramCannotStart) {
  const auto job = make_job();
  EXPECT_THROW(JobExecution::start(job, read_job(job), CommandSpec{{"/nonexistent/program"}}, settings_),
               std::system_error);
}

// A training-style job: on SIGTERM it writes checkpoint metadata and exits 0.
TEST_F(JobExecutionTest, PreemptionSignalsTheJobWhichCheckpoints) {
  auto execution = start(
      R"sh(trap 'printf "{\"epoch\":3,\"step\":1200,\"loss\":0.25,\"storage_key\":\"ck/3\",\"grace\":%s}" )sh"
      R"sh("$(cat "$OJS_PREEMPT_FILE")" > "$OJS_CHECKPOINT_FILE.tmp" && mv "$OJS_CHECKPOINT_FILE.tmp" "$OJS_CHECKPOINT_FILE"; exit 0' TERM; )sh"
      R"sh(echo ready > ready; while :; do sleep 0.05; done)sh");
  wait_for_file(*execution, "ready");
  EXPECT_FALSE(execution->checkpoint().take_if_changed().has_value());
  execution->preempt(7);
  const auto outcome = run_to_end(*execution);
  EXPECT_EQ(outcome.kind, JobOutcome::Kind::preempted);
  EXPECT_TRUE(outcome.requeue);
  EXPECT_EQ(outcome.error["code"], "preempted");
  const auto checkpoint = execution->checkpoint().take_if_changed();
  ASSERT_TRUE(checkpoint.has_value());
  EXPECT_EQ((*checkpoint)["epoch"], 3);
  EXPECT_EQ((*checkpoint)["storage_key"], "ck/3");
  EXPECT_EQ((*checkpoint)["grace"], 7);
  EXPECT_FALSE(execution->checkpoint().take_if_changed().has_value());  // committed once
}

// A script started through `sh -c` that cannot exec it (here: `; true`): the outer
// shell dies of the SIGTERM at once, the script's trap is still writing its
// checkpoint. The outcome waits for the whole group, so the checkpoint is there.
TEST_F(JobExecutionTest, PreemptionWaitsForTheGroupNotOnlyTheWrappingShell) {
  auto execution = start(
      R"sh(printf '{"step":7}' > ck.json; )sh"
      R"sh(sh -c 'trap "sleep 0.3; cp ck.json \"$OJS_CHECKPOINT_FILE\"; exit 0" TERM; echo ready > ready; )sh"
      R"sh(while :; do sleep 0.05; done'; true)sh");
  wait_for_file(*execution, "ready");
  execution->preempt(5);
  const auto outcome = run_to_end(*execution);
  EXPECT_EQ(outcome.kind, JobOutcome::Kind::preempted);
  const auto checkpoint = execution->checkpoint().take_if_changed();
  ASSERT_TRUE(checkpoint.has_value()) << "the outcome came before the job's trap had written its checkpoint";
  EXPECT_EQ((*checkpoint)["step"], 7);
}

TEST_F(JobExecutionTest, PreemptionKillsAJobThatOverstaysItsGrace) {
  auto execution = start("trap '' TERM; echo ready > ready; while :; do sleep 0.05; done");
  wait_for_file(*execution, "ready");
  execution->preempt(0.3);
  const auto outcome = run_to_end(*execution, 5s);
  EXPECT_EQ(outcome.kind, JobOutcome::Kind::preempted);
  EXPECT_EQ(outcome.error["details"]["signal"], SIGKILL);  // TERM ignored: killed once the grace ran out
}

TEST_F(JobExecutionTest, ReleaseRequeuesWithShutdownCode) {
  auto execution = start("sleep 5");
  execution->release();
  const auto outcome = run_to_end(*execution);
  EXPECT_EQ(outcome.kind, JobOutcome::Kind::released);
  EXPECT_TRUE(outcome.requeue);
  EXPECT_EQ(outcome.error["code"], "worker_shutdown");
}

TEST(JobView, ReadsSpecAndSdkEncodings) {
  const auto spec = read_job(make_job({{"ext_ml_timeout_seconds", 30}, {"ext_ml_model_id", "m"}}));
  EXPECT_EQ(spec.timeout_s, 30.0);
  EXPECT_EQ(spec.model_id, "m");
  const auto sdk = read_job(make_job({{"timeout", 12}, {"meta", {{"model", {{"id", "m2"}, {"checksum", "sha256:ab"}}}}}}));
  EXPECT_EQ(sdk.timeout_s, 12.0);
  EXPECT_EQ(sdk.model_id, "m2");
  EXPECT_EQ(sdk.model_checksum, "sha256:ab");
  EXPECT_THROW(read_job(nlohmann::json::object()), std::invalid_argument);
}

// The broker accepts meta.model.name for the model (the spec RFC's name); the worker
// reads the model it verifies and caches from the same alias table.
TEST(JobView, ReadsTheModelNameTheBrokerAccepts) {
  const auto named = read_job(make_job({{"meta", {{"model", {{"name", "llama-3-8b"}}}}}}));
  EXPECT_EQ(named.model_id, "llama-3-8b");
  const auto both = read_job(make_job({{"meta", {{"model", {{"name", "a"}, {"id", "b"}}}}}}));
  EXPECT_EQ(both.model_id, "b");  // model.id wins, as at PUSH
}

}  // namespace
}  // namespace ojs::worker
