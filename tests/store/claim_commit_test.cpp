// Decide, then commit (broker/scheduling/claimer.cpp over broker/store/claim_store.cpp
// and claim.lua) on a real redis-server: the commit re-checks what must hold and
// names what it passed over, and the claimer decides again on fresh reads. These
// are the paths a second broker's claims open between a snapshot and its commit.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <random>
#include <string>
#include <vector>

#include "broker/scheduling/claimer.hpp"
#include "broker/scheduling/fair_order.hpp"
#include "broker/scheduling/gang_decision.hpp"
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
  TransitionStatus jobs_push(const BatchJob& b) { return jobs.push(b).status; }
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

// max_total_tpu_chips is re-checked at commit as the GPU limits are; a TPU pick that
// fits is charged (the job's charged_tpu_chips, the ledger's tpu_chips), and a GPU
// pick is not held to the chip limit.
TEST_F(ClaimCommit, TheTpuChipBudgetIsCheckedAndChargedAtCommit) {
  push("p1", "POD");
  push("p2", "POD");
  push("g1", "GPU");
  cmd({"HSET", keys::config(kQueue), "max_total_tpu_chips", "16"});
  const auto snapshot = claims.heads_of(kQueue, {"POD"});
  ASSERT_EQ(snapshot.budget.max_tpu_chips, 16);
  auto out = commit({{"POD", "p1", 0, 0, "", 0, 16}});
  ASSERT_EQ(out.jobs.size(), 1u);
  EXPECT_EQ(cmd({"HGET", keys::job_prefix(kQueue) + "p1", "charged_tpu_chips"}), "16");
  EXPECT_EQ(cmd({"HGET", keys::ledger(kQueue), "tpu_chips"}), "16");
  EXPECT_EQ(claims.heads_of(kQueue, {"POD"}).budget.tpu_chips_in_use, 16) << "the snapshot reads the ledger";
  out = commit({{"POD", "p2", 0, 0, "", 0, 16}, {"GPU", "g1", 0, 1, "", 0, 0}});
  ASSERT_EQ(out.jobs.size(), 1u);
  EXPECT_EQ(out.jobs[0].id(), "g1") << "a GPU job is not held to the chip limit";
  ASSERT_EQ(out.budget_blocked.size(), 1u);
  EXPECT_EQ(out.budget_blocked[0].kind, "max_total_tpu_chips");
  EXPECT_EQ(out.budget_blocked[0].in_use, 16);
  EXPECT_EQ(out.budget_blocked[0].limit, 16);
  EXPECT_EQ(cmd({"HGET", keys::job_prefix(kQueue) + "p2", "state"}), "available") << "refused, never lost";
  EXPECT_EQ(cmd({"HGET", keys::ledger(kQueue), "tpu_chips"}), "16");
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

// Twenty classes ahead in the queue's order, each held for a warm worker: the
// claimer learns them four at a time and goes on to the one it may take (three
// rounds would have seen twelve and come back empty until the holds expired).
TEST_F(ClaimCommit, TheClaimerTakesAJobBehindManyClassesHeldForAWarmWorker) {
  std::vector<EligibleClass> open;
  for (int i = 0; i < 20; ++i) {
    const std::string cls = "H" + std::to_string(100 + i);
    push("h" + std::to_string(i), cls, "", 100);  // a lower band: served before Z
    cmd({"HSET", keys::job_prefix(kQueue) + "h" + std::to_string(i), "enqueued_at", "5000"});
    auto c = eligible(cls);
    c.hold_enqueued_after_ms = 4999;
    open.push_back(c);
  }
  push("z1", "Z", "", 200);
  open.push_back(eligible("Z"));
  Claimer claimer(claims);
  const auto out = claimer.claim({kQueue, "w1", std::nullopt, 30000, 1, version(), false}, open);
  ASSERT_EQ(out.jobs.size(), 1u);
  EXPECT_EQ(out.jobs[0].id(), "z1");
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

// A gang pick decided before another worker started forming a gang is not
// committed ('stale': only the forming gang may hold members); the claimer reads
// again and joins the gang that forms, which this member completes.
TEST_F(ClaimCommit, AGangPickOvertakenByAnotherFormingIsDecidedAgain) {
  for (const auto& [id, cls, band] : {std::tuple{"g1", "G1", 100LL}, std::tuple{"g2", "G2", 101LL}}) {
    BatchJob b{kQueue, id, cls, std::string("{\"class\":\"") + cls + "\"}", static_cast<double>(band) * kScoreBand, std::nullopt, {},
               std::nullopt, std::nullopt};
    b.fields = {{"queue", kQueue}, {"type", "t"}, {"priority", "0"}, {"gang_size", "2"}, {"gang_timeout_ms", "60000"}};
    ASSERT_EQ(jobs.push(b).status, TransitionStatus::ok);
  }
  GangClass g1{"G1", 0, 0, "", ""}, g2{"G2", 0, 0, "", ""};
  const std::vector<GangClass> w2_classes{g2, g1};
  // w2 decides while no gang forms: g1 is the best head.
  const auto w2_pick = decide_gang(claims.gang_candidates(kQueue, w2_classes), w2_classes, "w2");
  ASSERT_EQ(w2_pick.kind, GangPick::Kind::form);
  EXPECT_EQ(w2_pick.job_id, "g1");
  // Meanwhile w1, which may only take G2, starts forming g2.
  Claimer claimer(claims);
  const auto held = claimer.claim_gang({kQueue, {"w1", "w1", "29500"}, std::nullopt, 30000, {}, {}}, {g2});
  ASSERT_EQ(held.kind, GangClaim::Kind::held);
  EXPECT_EQ(held.job_id, "g2");
  // w2's pick no longer holds: nothing is written.
  const auto stale = claims.claim_gang(kQueue, {"w2", "w2", "29500"}, std::nullopt, 30000, w2_pick);
  EXPECT_EQ(stale.kind, GangClaim::Kind::stale);
  EXPECT_EQ(cmd({"HGET", keys::job_prefix(kQueue) + "g1", "gang_workers"}), "") << "g1 holds no member";
  // Decided again, w2 joins g2 and completes it.
  const auto started = claimer.claim_gang({kQueue, {"w2", "w2", "29500"}, std::nullopt, 30000, {}, {}}, w2_classes);
  ASSERT_EQ(started.kind, GangClaim::Kind::start);
  EXPECT_EQ(started.job_id, "g2");
  EXPECT_EQ(started.rank, 1);
}

// A fair queue's candidates as fair_candidates.lua lists them from the ready sets
// (FETCH) and as fair_candidates_of lists the same jobs (the start estimate's run
// lists its own with it): the same, on 200 random queues of either order, with
// jobs of named and unnamed tenants, of a slot past the named ones (an earlier
// weights' layout) and now and then one scored under an earlier policy.
TEST_F(ClaimCommit, AFairQueuesCandidatesAreListedAsTheEstimateListsThem) {
  std::mt19937 rng(20261207);
  const std::vector<std::string> tenants{"a", "b", "c", ""};
  int listed = 0;
  for (int n = 0; n < 200; ++n) {
    cmd({"FLUSHALL"});
    const bool by_tenant = rng() % 3 != 0;
    const nlohmann::json layout = {{"base", kFairBandBase}, {"slots", 3}, {"default_weight", 1},
                                   {"tenants", {{"a", {1, 1}}, {"b", {2, 3}}}}, {"order", by_tenant ? "tenant" : "class"}};
    cmd({"HSET", keys::config(kQueue), "policy", "fair", "fair_tenants", layout.dump()});
    const int jobs = 1 + static_cast<int>(rng() % 14);
    for (int j = 0; j < jobs; ++j) {
      const std::string tenant = tenants[rng() % tenants.size()];
      const int slot = tenant == "a" ? 1 : tenant == "b" ? 2 : rng() % 5 == 0 ? 4 : 0;
      const double base = rng() % 20 == 0 ? rank_base(1, 0) : pack_score(kFairBandBase + (rng() % 3) * kMaxFairSlots + slot, 0);
      BatchJob b{kQueue, "j" + std::to_string(j), rng() % 2 ? "A" : "B", "{}", base, std::nullopt, {}, std::nullopt, std::nullopt};
      b.fields = {{"queue", kQueue}, {"type", "t"}, {"priority", "0"}};
      if (!tenant.empty()) b.fields.emplace_back("tenant", tenant);
      ASSERT_EQ(jobs_push(b), TransitionStatus::ok);
    }
    const int depth = 1 + static_cast<int>(rng() % 3);
    const auto fetch = claims.fair_detail(kQueue, {"A", "B"}, depth, false);
    for (const std::string cls : {"A", "B"}) {
      // The class's ready set as Redis holds it, with each job's tenant.
      const auto flat = pool.command({"ZRANGE", keys::ready(kQueue, cls), "0", "-1", "WITHSCORES"}).elements;
      std::vector<FairCandidate> ready;
      for (std::size_t i = 0; i + 1 < flat.size(); i += 2) {
        FairCandidate c;
        c.id = flat[i].str;
        c.score = std::strtod(flat[i + 1].str.c_str(), nullptr);
        c.tenant = cmd({"HGET", keys::job_prefix(kQueue) + c.id, "tenant"});
        ready.push_back(std::move(c));
      }
      const ReadyRange range = [&ready](double low, double high, int count) {
        std::vector<FairCandidate> out;
        for (const auto& c : ready)
          if (c.score >= low && c.score < high && static_cast<int>(out.size()) < count) out.push_back(c);
        return out;
      };
      const auto estimate = fair_candidates_of(range, fair_layout_from(layout.dump()), depth);
      const auto it = fetch.classes.find(cls);
      const std::vector<FairCandidate> none;
      const auto& listed_by_fetch = it == fetch.classes.end() ? none : it->second;
      std::string a, b;
      for (const auto& c : listed_by_fetch) a += c.id + "@" + std::to_string(c.class_band) + "/" + std::to_string(c.slot) + "/" + c.tenant + " ";
      for (const auto& c : estimate) b += c.id + "@" + std::to_string(c.class_band) + "/" + std::to_string(c.slot) + "/" + c.tenant + " ";
      ASSERT_EQ(a, b) << "queue " << n << " class " << cls << " depth " << depth << " " << layout.dump();
      listed += static_cast<int>(estimate.size());
    }
  }
  EXPECT_GT(listed, 400) << "the cases list little";
}
