// Decide, then commit (broker/scheduling/claimer.cpp over broker/store/claim_store.cpp
// and claim.lua) on a real redis-server: the commit re-checks what must hold and
// names what it passed over, and the claimer decides again on fresh reads. These
// are the paths a second broker's claims open between a snapshot and its commit.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "broker/scheduling/claimer.hpp"
#include "broker/store/claim_store.hpp"
#include "broker/store/job_store.hpp"
#include "broker/store/keys.hpp"
#include "broker/store/priority_score.hpp"
#include "support/processes.hpp"

using namespace ojs::broker;

namespace {

constexpr const char* kQueue = "commit-q";

class ClaimCommit : public ::testing::Test {
 protected:
  ojs::test::RedisServer redis;
  RedisPool pool{parse_redis_url(redis.url()), 1};
  JobStore jobs{pool};
  ClaimStore claims{pool};

  void push(const std::string& id, const std::string& cls, const std::string& tenant = "", long long seq_band = 100) {
    BatchJob b{kQueue, id, cls, "{\"class\":\"" + cls + "\"}", static_cast<double>(seq_band) * kScoreBand, std::nullopt, {}, std::nullopt,
               std::nullopt};
    b.fields = {{"queue", kQueue}, {"type", "t"}, {"priority", "0"}};
    if (!tenant.empty()) b.fields.emplace_back("tenant", tenant);
    ASSERT_EQ(jobs.push(b).status, TransitionStatus::ok);
  }
  std::string version() { return claims.heads_of(kQueue, {}).classes_version; }
  ClaimOutcome commit(const std::vector<CommitPick>& picks, int count = 1) {
    return claims.commit(kQueue, "w1", std::nullopt, 30000, count, version(), picks, false);
  }
  std::string cmd(const std::vector<std::string>& argv) { return pool.command(argv).str; }
};

EligibleClass eligible(const std::string& id, int gpus = 0) {
  EligibleClass c;
  c.id = id;
  c.gpus = gpus;
  return c;
}

TEST_F(ClaimCommit, APickWhoseJobIsGoneIsPassedOverAndTheNextTaken) {
  push("a1", "A");
  push("b1", "B");
  const auto out = commit({{"A", "no-such-job", 0, 0, "", 0}, {"B", "", 0, 0, "", 0}});
  ASSERT_EQ(out.jobs.size(), 1u);
  EXPECT_EQ(out.jobs[0].id(), "b1");
  ASSERT_EQ(out.passed_over.size(), 1u);
  EXPECT_EQ(out.passed_over[0], (std::pair<std::string, std::string>{"A", "gone"}));
  EXPECT_EQ(cmd({"ZSCORE", keys::ready(kQueue, "A"), "a1"}).empty(), false) << "A's job was not touched";
}

TEST_F(ClaimCommit, TheBudgetIsCheckedAtCommitNotTrustedFromTheSnapshot) {
  push("a1", "A");
  cmd({"HSET", keys::config(kQueue), "max_total_gpus", "2"});
  const auto snapshot = claims.heads_of(kQueue, {"A"});
  ASSERT_EQ(snapshot.budget.max_gpus, 2);
  cmd({"HINCRBY", keys::ledger(kQueue), "gpus", "2"});  // another broker's claim, after the snapshot
  cmd({"HINCRBY", keys::ledger(kQueue), "gpu_jobs", "1"});
  const auto out = commit({{"A", "", 0, 1, "", 0}});
  EXPECT_TRUE(out.jobs.empty());
  ASSERT_EQ(out.budget_blocked.size(), 1u);
  EXPECT_EQ(out.budget_blocked[0].kind, "max_total_gpus");
  EXPECT_EQ(out.budget_blocked[0].in_use, 2);
  EXPECT_EQ(cmd({"HGET", keys::job_prefix(kQueue) + "a1", "state"}), "available") << "refused, never lost";
}

TEST_F(ClaimCommit, ATenantOverItsQuotaIsRefusedAtCommit) {
  push("a1", "A", "team-a");
  cmd({"HSET", keys::tenant_quotas(kQueue), "team-a", "1"});
  cmd({"HSET", keys::config(kQueue), "tenant_quotas", "1"});
  cmd({"HSET", keys::tenant_ledger(kQueue), "team-a", "1"});
  const auto out = commit({{"A", "a1", 0, 1, "", 0}});
  EXPECT_TRUE(out.jobs.empty());
  ASSERT_EQ(out.budget_blocked.size(), 1u);
  EXPECT_EQ(out.budget_blocked[0].kind, "tenant_quota:team-a");
}

TEST_F(ClaimCommit, AHeadEnqueuedAfterTheHoldCutoffIsHeldForAWarmWorker) {
  push("a1", "A");
  cmd({"HSET", keys::job_prefix(kQueue) + "a1", "enqueued_at", "5000"});
  const auto held = commit({{"A", "", 4999, 0, "", 0}});
  EXPECT_TRUE(held.jobs.empty());
  ASSERT_EQ(held.passed_over.size(), 1u);
  EXPECT_EQ(held.passed_over[0].second, "held");
  EXPECT_EQ(commit({{"A", "", 5000, 0, "", 0}}).jobs.size(), 1u);
}

TEST_F(ClaimCommit, TheClaimerDecidesAgainWhenItsSnapshotWasStale) {
  push("a1", "A");
  push("b0", "B");
  ASSERT_EQ(commit({{"B", "b0", 0, 0, "", 0}}).jobs.size(), 1u);  // B is known, and empty
  const auto stale = claims.heads_of(kQueue, {"A", "B"});  // before B had another job
  ASSERT_EQ(stale.heads.size(), 1u);
  push("b1", "B");
  const auto other = commit({{"A", "", 0, 0, "", 0}});  // another broker takes A's only job
  ASSERT_EQ(other.jobs.size(), 1u);
  Claimer claimer(claims);
  const auto out = claimer.claim({kQueue, "w2", std::nullopt, 30000, 1, version(), false}, {eligible("A"), eligible("B")}, &stale);
  ASSERT_EQ(out.jobs.size(), 1u) << "the pick of A came back gone: decided again on fresh reads";
  EXPECT_EQ(out.jobs[0].id(), "b1");
}

TEST_F(ClaimCommit, TheClaimerTakesTheJobBehindAnOverQuotaTenant) {
  push("a1", "A", "team-a");
  push("a2", "A", "team-b");
  cmd({"HSET", keys::tenant_quotas(kQueue), "team-a", "0"});
  cmd({"HSET", keys::config(kQueue), "tenant_quotas", "1"});
  Claimer claimer(claims);
  const auto out = claimer.claim({kQueue, "w1", std::nullopt, 30000, 1, version(), false}, {eligible("A", 1)});
  ASSERT_EQ(out.jobs.size(), 1u);
  EXPECT_EQ(out.jobs[0].id(), "a2");
  EXPECT_EQ(cmd({"HGET", keys::tenant_ledger(kQueue), "team-b"}), "1");
}

TEST_F(ClaimCommit, ANewClassMakesTheClaimStaleBeforeAnythingIsDecided) {
  push("a1", "A");
  const auto before = version();
  push("b1", "B");
  Claimer claimer(claims);
  const auto out = claimer.claim({kQueue, "w1", std::nullopt, 30000, 1, before, false}, {eligible("A")});
  EXPECT_EQ(out.status, TransitionStatus::stale);
  EXPECT_EQ(out.current_version, version());
  EXPECT_TRUE(out.jobs.empty());
}

}  // namespace
