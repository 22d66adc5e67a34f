// Which gang a fetching worker joins (scheduling/gang_decision.cpp): pure, no
// Redis. claim_gang.lua only commits the pick (tests/store/claim_commit_test.cpp).
#include <gtest/gtest.h>

#include "broker/scheduling/elastic_share.hpp"
#include "broker/scheduling/gang_decision.hpp"
#include "broker/store/priority_score.hpp"

using namespace ojs::broker;

namespace {

constexpr std::int64_t kNow = 1764000000000;

GangClass cls(const std::string& id, const std::string& label = "") {
  GangClass c;
  c.id = id;
  c.gpus = 4;
  c.label_value = label;
  return c;
}

GangCandidates::Head head(const std::string& cls, const std::string& job, double score) {
  GangCandidates::Head h;
  h.class_id = cls;
  h.job_id = job;
  h.score = score;
  return h;
}

GangCandidates forming(const std::string& job, const std::string& cls, const std::string& workers, const std::string& label = "",
                       const std::string& first_label = "") {
  GangCandidates c;
  c.now_ms = kNow;
  c.forming = GangCandidates::Forming{job, "available", cls, workers, first_label, label, std::nullopt, std::nullopt, ""};
  return c;
}

}  // namespace

TEST(GangDecision, TheFormingGangIsTheOnlyOneJoined) {
  auto c = forming("g1", "A", R"(["w1"])");
  c.heads = {head("B", "g2", 1)};  // a better head elsewhere waits until g1 starts
  const std::vector<GangClass> eligible{cls("A"), cls("B")};
  const auto pick = decide_gang(c, eligible, "w2");
  EXPECT_EQ(pick.kind, GangPick::Kind::join);
  EXPECT_EQ(pick.job_id, "g1");
  ASSERT_TRUE(pick.cls);
  EXPECT_EQ(pick.cls->id, "A");
  EXPECT_EQ(decide_gang(c, {cls("B")}, "w2").kind, GangPick::Kind::none) << "it cannot take the forming gang's class";
}

TEST(GangDecision, AWorkerAlreadyHeldIsSentToItsGangWhateverItMayTake) {
  const auto c = forming("g1", "A", R"(["w1"])");
  const auto pick = decide_gang(c, {}, "w1");
  EXPECT_EQ(pick.kind, GangPick::Kind::join);
  EXPECT_EQ(pick.job_id, "g1");
  EXPECT_EQ(pick.cls, nullptr) << "its GPUs are held by the gang: the commit answers 'waiting'";
}

TEST(GangDecision, ASameLabelGangTakesOnlyWorkersWithItsFirstMembersValue) {
  const auto c = forming("g1", "A", R"(["w1"])", "rack", "r1");
  EXPECT_EQ(decide_gang(c, {cls("A", "r1")}, "w2").kind, GangPick::Kind::join);
  EXPECT_EQ(decide_gang(c, {cls("A", "r2")}, "w2").kind, GangPick::Kind::none);
  EXPECT_EQ(decide_gang(c, {cls("A")}, "w2").kind, GangPick::Kind::none) << "no value of the label";
}

TEST(GangDecision, WithNoGangFormingTheBestHeadStartsOne) {
  GangCandidates c;
  c.now_ms = kNow;
  c.heads = {head("A", "a1", 20), head("B", "b1", 10), head("C", "c1", 5)};
  c.heads[2].retry_at = kNow + 1000;  // backing off after a hold timed out
  const std::vector<GangClass> eligible{cls("A"), cls("B"), cls("C")};
  const auto pick = decide_gang(c, eligible, "w1");
  EXPECT_EQ(pick.kind, GangPick::Kind::form);
  EXPECT_EQ(pick.job_id, "b1");
  c.heads[1].gang_label = "rack";  // b1 needs a label this worker lacks
  EXPECT_EQ(decide_gang(c, eligible, "w1").job_id, "a1");
  EXPECT_EQ(decide_gang(c, {cls("A"), cls("B", "r1"), cls("C")}, "w1").job_id, "b1");
}

TEST(GangDecision, ExpiredHeadsAndGangsAreLeftForTheCommitToDiscard) {
  auto c = forming("g1", "A", R"(["w1"])");
  c.forming->expires_at = kNow;  // expired: the commit discards it, releasing w1
  c.heads = {head("A", "a1", 1), head("B", "b1", 2)};
  c.heads[0].expires_at = kNow - 1;
  const auto pick = decide_gang(c, {cls("A"), cls("B")}, "w2");
  EXPECT_EQ(pick.kind, GangPick::Kind::form);
  EXPECT_EQ(pick.job_id, "b1");
  EXPECT_EQ(pick.expired, std::vector<std::string>{"a1"});
}

TEST(GangDecision, AFormingGangWhoseJobMovedOnIsNotJoined) {
  auto c = forming("g1", "A", "");  // its members were released
  c.heads = {head("A", "g1", 1)};
  const auto pick = decide_gang(c, {cls("A")}, "w2");
  EXPECT_EQ(pick.kind, GangPick::Kind::form) << "the commit releases the stale entry, then forms it anew";
  EXPECT_EQ(pick.job_id, "g1");
}

namespace {

GangCandidates::Growing growing(const std::string& job, const std::string& cls, const std::string& workers, int max_size,
                                double score) {
  GangCandidates::Growing g;
  g.id = job;
  g.state = "active";
  g.class_id = cls;
  g.workers_json = workers;
  g.max_size = max_size;
  g.score = score;
  return g;
}

}  // namespace

TEST(GangDecision, ARunningElasticGangBelowItsMaxGrowsByTheWorker) {
  GangCandidates c;
  c.now_ms = kNow;
  c.growing = {growing("e1", "A", R"(["w1","w2"])", 8, 10)};
  const std::vector<GangClass> eligible{cls("A")};  // the pick points into it
  const auto pick = decide_gang(c, eligible, "w3");
  EXPECT_EQ(pick.kind, GangPick::Kind::grow);
  EXPECT_EQ(pick.job_id, "e1");
  ASSERT_TRUE(pick.cls);
  EXPECT_EQ(pick.cls->id, "A");
  EXPECT_EQ(decide_gang(c, {cls("B")}, "w3").kind, GangPick::Kind::none) << "it cannot take the gang's class";
  EXPECT_EQ(decide_gang(c, {cls("A")}, "w2").kind, GangPick::Kind::none) << "a member does not join twice";
  c.growing[0].workers_json = R"(["w1","w2","w4","w5","w6","w7","w8","w9"])";
  EXPECT_EQ(decide_gang(c, {cls("A")}, "w3").kind, GangPick::Kind::none) << "at max_size";
  c.growing[0].workers_json = R"(["w1","w2"])";
  c.growing[0].acked = true;
  EXPECT_EQ(decide_gang(c, {cls("A")}, "w3").kind, GangPick::Kind::none) << "a rank ACKed: it is finishing";
  c.growing[0].acked = false;
  c.growing[0].state = "available";
  EXPECT_EQ(decide_gang(c, {cls("A")}, "w3").kind, GangPick::Kind::none) << "it ended and re-forms";
}

TEST(GangDecision, AGangGrowsOnlyWhenNothingAheadOfItInTheQueueCouldUseTheWorker) {
  GangCandidates c;
  c.now_ms = kNow;
  c.growing = {growing("e1", "A", R"(["w1","w2"])", 4, 10), growing("e2", "A", R"(["w5","w6"])", 4, 5)};
  int asked = 0;
  const auto rival = [&](std::optional<double> score) {
    return RivalScore([&asked, score] { ++asked; return score; });
  };
  auto pick = decide_gang(c, {cls("A")}, "w3", rival(std::nullopt));
  EXPECT_EQ(pick.kind, GangPick::Kind::grow);
  EXPECT_EQ(pick.job_id, "e2") << "the gang first in the queue's order grows first";
  EXPECT_EQ(decide_gang(c, {cls("A")}, "w3", rival(1)).kind, GangPick::Kind::none) << "a plain job ahead takes it";
  EXPECT_EQ(decide_gang(c, {cls("A")}, "w3", rival(50)).kind, GangPick::Kind::grow) << "a plain job behind waits";
  EXPECT_EQ(asked, 3);
  // A gang class head ahead of the growing gang forms instead; one behind waits.
  c.heads = {head("B", "g9", 1)};
  pick = decide_gang(c, {cls("A"), cls("B")}, "w3", rival(std::nullopt));
  EXPECT_EQ(pick.kind, GangPick::Kind::form);
  EXPECT_EQ(pick.job_id, "g9");
  c.heads = {head("B", "g9", 99)};
  EXPECT_EQ(decide_gang(c, {cls("A"), cls("B")}, "w3", rival(std::nullopt)).kind, GangPick::Kind::grow);
  // With no growable gang the rival is never asked (its judging costs a FETCH's filters).
  asked = 0;
  c.growing.clear();
  EXPECT_EQ(decide_gang(c, {cls("A"), cls("B")}, "w3", rival(1)).kind, GangPick::Kind::form);
  EXPECT_EQ(asked, 0);
}

// A worker a capacity hold keeps for a preemptor (the gang a share shrink freed it
// for) grows no running gang, even one ahead in the queue: the gang that just gave a
// member up would otherwise take it straight back.
TEST(GangDecision, AWorkerKeptForAPreemptorGrowsNoRunningGang) {
  GangCandidates c;
  c.now_ms = kNow;
  c.growing = {growing("e1", "A", R"(["w1","w2"])", 8, 5)};
  c.heads = {head("A", "g2", 10)};
  const std::vector<GangClass> eligible{cls("A")};
  EXPECT_EQ(decide_gang(c, eligible, "w3").kind, GangPick::Kind::grow) << "a worker not kept: the gang ahead grows";
  const auto pick = decide_gang(c, eligible, "w3", {}, {}, {}, /*may_grow=*/false);
  EXPECT_EQ(pick.kind, GangPick::Kind::form);
  EXPECT_EQ(pick.job_id, "g2");
}

TEST(GangDecision, ASameLabelElasticGangGrowsOnlyByWorkersWithItsValue) {
  GangCandidates c;
  c.now_ms = kNow;
  c.growing = {growing("e1", "A", R"(["w1"])", 4, 10)};
  c.growing[0].gang_label = "rack";
  c.growing[0].first_label = "r1";
  EXPECT_EQ(decide_gang(c, {cls("A", "r1")}, "w3").kind, GangPick::Kind::grow);
  EXPECT_EQ(decide_gang(c, {cls("A", "r2")}, "w3").kind, GangPick::Kind::none);
  EXPECT_EQ(decide_gang(c, {cls("A")}, "w3").kind, GangPick::Kind::none);
}

TEST(GangDecision, EqualElasticGangsShareTheNodesTheNextGoingToTheSmallest) {
  // Two 2..8 gangs of one band: A runs on 2 nodes, B waits to form. The queue's order
  // would grow A; B, furthest below its share, starts forming instead.
  GangCandidates c;
  c.now_ms = kNow;
  c.growing = {growing("a", "A", R"(["w1","w2"])", 8, 10)};
  c.heads = {head("B", "b", 20)};
  const std::set<std::string> elastic{"A", "B"};
  const std::vector<GangClass> eligible{cls("A"), cls("B")};
  auto pick = decide_gang(c, eligible, "w3", {}, elastic);
  EXPECT_EQ(pick.kind, GangPick::Kind::form);
  EXPECT_EQ(pick.job_id, "b");
  EXPECT_EQ(decide_gang(c, eligible, "w3").kind, GangPick::Kind::grow) << "fixed gangs keep the queue's order";
  // B forms with one member: it still has fewer than A, so it takes the next worker.
  c.heads.clear();
  c.forming = GangCandidates::Forming{"b", "available", "B", R"(["w3"])", "", "", std::nullopt, 20, ""};
  pick = decide_gang(c, eligible, "w4", {}, elastic);
  EXPECT_EQ(pick.kind, GangPick::Kind::join);
  // Both run with 2: equally far below their share, the first in the queue's order grows.
  c.forming.reset();
  c.growing.push_back(growing("b", "B", R"(["w3","w4"])", 8, 20));
  pick = decide_gang(c, eligible, "w5", {}, elastic);
  EXPECT_EQ(pick.kind, GangPick::Kind::grow);
  EXPECT_EQ(pick.job_id, "a");
  // A at 3, B at 2: B grows, though it is behind A in the queue's order.
  c.growing[0].workers_json = R"(["w1","w2","w5"])";
  pick = decide_gang(c, eligible, "w6", {}, elastic);
  EXPECT_EQ(pick.job_id, "b");
  // B in a lower priority band is no equal: A, ahead of it, grows whatever its size.
  c.growing[1].score = 20 + 2 * 1099511627776.0;
  EXPECT_EQ(decide_gang(c, eligible, "w6", {}, elastic).job_id, "a");
}

TEST(ElasticShare, FurthestBelowItsShareThenFirstInTheQueue) {
  EXPECT_EQ(furthest_below_share({{"a", 3, 1, ""}, {"b", 2, 2, ""}}), 1u);
  EXPECT_EQ(furthest_below_share({{"a", 2, 1, ""}, {"b", 2, 2, ""}}), 0u);
  EXPECT_EQ(furthest_below_share({{"a", 4, 1, ""}, {"b", 4, 2, ""}, {"c", 0, 3, ""}}), 2u);
}

namespace {

// Two tenants weighted 1:3, holding `a` and `b` GPUs now, no use before.
FairShares weighted_one_to_three(double a, double b) {
  FairShares s;
  s.resource = 1;
  s.queue_held = a + b;
  s.tenants["team-a"] = {1, 0, a};
  s.tenants["team-b"] = {3, 0, b};
  return s;
}

}  // namespace

TEST(ElasticShare, UnderFairTheTenantWithTheLowestShareFirstThenTheSmallestGang) {
  // team-a (weight 1) holds 2 nodes' GPUs, team-b (weight 3) 5: b's share 5/7/3 < a's 2/7.
  auto shares = weighted_one_to_three(8, 20);
  const std::vector<ElasticContender> two = {{"a", 2, 1, "team-a"}, {"b", 5, 2, "team-b"}};
  EXPECT_EQ(furthest_below_share(two, &shares), 1u);
  EXPECT_EQ(furthest_below_share(two), 0u) << "without shares the smallest gang";
  // At 2 and 6 the shares are equal (1/4 each): the smaller gang, wherever it is in the queue.
  shares = weighted_one_to_three(8, 24);
  EXPECT_EQ(furthest_below_share({{"a", 2, 1, "team-a"}, {"b", 6, 2, "team-b"}}, &shares), 0u);
  EXPECT_EQ(furthest_below_share({{"b", 6, 1, "team-b"}, {"a", 2, 2, "team-a"}}, &shares), 1u);
  // Gangs of one tenant: its share is the same for both, the smaller gang takes it,
  // and equal ones go by the queue's order.
  EXPECT_EQ(furthest_below_share({{"b1", 4, 1, "team-b"}, {"b2", 2, 2, "team-b"}}, &shares), 1u);
  EXPECT_EQ(furthest_below_share({{"b1", 2, 2, "team-b"}, {"b2", 2, 1, "team-b"}}, &shares), 1u);
  // A tenant's decayed use counts too: team-a used the queue alone before.
  shares = weighted_one_to_three(8, 8);
  shares.tenants["team-a"].used = 1;
  EXPECT_EQ(furthest_below_share({{"a", 2, 1, "team-a"}, {"b", 2, 2, "team-b"}}, &shares), 1u);
}

TEST(GangDecision, ElasticGangsOfWeightedTenantsTakeNodesByTheirShares) {
  // A (team-a) and B (team-b) run with 2 members each; the tenants are weighted 1:3.
  GangCandidates c;
  c.now_ms = kNow;
  c.growing = {growing("a", "A", R"(["w1","w2"])", 8, 10), growing("b", "B", R"(["w3","w4"])", 8, 20)};
  c.growing[0].tenant = "team-a";
  c.growing[1].tenant = "team-b";
  const std::set<std::string> elastic{"A", "B"};
  const std::vector<GangClass> eligible{cls("A"), cls("B")};
  int asked = 0;
  const TenantShares shares = [&] {
    ++asked;
    return std::optional<FairShares>(weighted_one_to_three(8, 8));
  };
  // Equal sizes: B, furthest below its weighted share, grows though A is first in the queue.
  auto pick = decide_gang(c, eligible, "w5", {}, elastic, shares);
  EXPECT_EQ(pick.kind, GangPick::Kind::grow);
  EXPECT_EQ(pick.job_id, "b");
  EXPECT_EQ(asked, 1);
  // Not a fair queue (no shares): the smaller gang, then the queue's order, as before.
  EXPECT_EQ(decide_gang(c, eligible, "w5", {}, elastic, [] { return std::optional<FairShares>(); }).job_id, "a");
  // One tenant's gangs only: the shares are not read.
  c.growing[0].tenant = "team-b";
  asked = 0;
  EXPECT_EQ(decide_gang(c, eligible, "w5", {}, elastic, shares).job_id, "a");
  EXPECT_EQ(asked, 0);
}

TEST(GangDecision, UnderFairGangsInOneClassBandAreEqualsWhateverTheirTenantsSlots) {
  // The fair layout scores team-a in slot 0 and team-b in slot 1 of class band 1: the
  // bands of the scores differ, the priority does not.
  const auto score = [](int class_band, int slot, int seq) {
    return (4096.0 + class_band * kMaxFairSlots + slot) * kScoreBand + seq;
  };
  GangCandidates c;
  c.now_ms = kNow;
  c.fair_layout_json = R"({"base":4096,"slots":2,"tenants":{"team-a":[0,1],"team-b":[1,3]}})";
  c.growing = {growing("a", "A", R"(["w1","w2"])", 8, score(1, 0, 1)), growing("b", "B", R"(["w3","w4"])", 8, score(1, 1, 2))};
  c.growing[0].tenant = "team-a";
  c.growing[1].tenant = "team-b";
  const std::set<std::string> elastic{"A", "B"};
  const std::vector<GangClass> eligible{cls("A"), cls("B")};
  const TenantShares shares = [] { return std::optional<FairShares>(weighted_one_to_three(8, 8)); };
  EXPECT_EQ(decide_gang(c, eligible, "w5", {}, elastic, shares).job_id, "b");
  // Read as priority bands (no layout) they are not equals: the first in the queue grows.
  c.fair_layout_json.clear();
  EXPECT_EQ(decide_gang(c, eligible, "w5", {}, elastic, shares).job_id, "a");
  // A higher class band is no equal under `fair` either.
  c.fair_layout_json = R"({"base":4096,"slots":2})";
  c.growing[1].score = score(2, 1, 2);
  EXPECT_EQ(decide_gang(c, eligible, "w5", {}, elastic, shares).job_id, "a");
  // Gangs scored before the queue turned fair (priority bands under the base) keep
  // their bands: a of band 1 is ahead of b of band 2, not its equal.
  c.growing[0].score = 1 * kScoreBand + 1;
  c.growing[1].score = 2 * kScoreBand + 2;
  EXPECT_EQ(decide_gang(c, eligible, "w5", {}, elastic, shares).job_id, "a");
}
