#include "broker/scheduling/claimer.hpp"

#include <algorithm>
#include <set>

#include "broker/scheduling/claim_decision.hpp"
#include "broker/scheduling/gang_decision.hpp"

namespace ojs::broker {

ClaimOutcome Claimer::claim(const ClaimRequest& r, const std::vector<EligibleClass>& eligible, const ClaimSnapshot* snapshot) {
  ClaimOutcome out;
  std::vector<EligibleClass> open = eligible;  // less the classes held for a warm worker, once met
  // A pick passed over (gone, a counter moved, held) is decided again on fresh
  // reads; each round commits or learns, so a few suffice. A round that only learns
  // of classes held for a warm worker does not count: it shrinks `open`, so the
  // claim reaches a class it may take behind any number of held ones (up to a bound
  // on the round trips one FETCH makes).
  constexpr int kRounds = 3, kMostRounds = 32;
  int rounds = kRounds;
  for (int round = 0; round < rounds && round < kMostRounds; ++round) {
    std::vector<std::string> ids;
    ids.reserve(open.size());
    for (const auto& c : open) ids.push_back(c.id);
    const bool given = round == 0 && snapshot;  // the caller's first snapshot, read with the worker's contact
    ClaimSnapshot fresh;
    if (!given) fresh = store_.heads_of(r.queue, ids);
    const ClaimSnapshot& snap = given ? *snapshot : fresh;
    if (snap.classes_version != r.classes_version && out.jobs.empty()) {
      // A class appeared since the caller judged: it refreshes its classes and judges
      // again (a class it never saw may be the one this worker should take).
      out.status = TransitionStatus::stale;
      out.current_version = snap.classes_version;
      return out;
    }
    const int want = r.count - static_cast<int>(out.jobs.size());
    ClaimDecisionInput in{snap, open, want, snap.now_ms};
    // The decision asks for what it must read past the snapshot (a fair queue's
    // candidates, the classes' first jobs), at most once each.
    ReadyDetail detail;
    FairDetail fair;
    auto plan = decide_claim(in);
    for (int reads = 0; reads < 2 && (plan.needs_fair || !plan.needs_jobs.empty()); ++reads) {
      if (plan.needs_fair) {
        std::vector<std::string> with_head;
        for (const auto& [id, score] : snap.heads) with_head.push_back(id);
        fair = store_.fair_detail(r.queue, with_head, want, snap.tenant_quotas);
        in.fair = &fair;
      } else {
        detail = store_.ready_detail(r.queue, plan.needs_jobs, plan.depth, plan.with_fields);
        in.detail = &detail;
      }
      plan = decide_claim(in);
    }
    out.budget_blocked = plan.blocked;
    // Nothing to take in the snapshot, but a scheduled job or retry is due (by Redis's
    // clock, as the commit reads it): the commit makes it available, then this
    // decides again.
    const bool due = snap.earliest_delayed_ms && *snap.earliest_delayed_ms <= in.now_ms;
    if (plan.picks.empty() && !due) break;
    auto committed = store_.commit(r.queue, r.worker_id, r.visibility_ms, r.default_visibility_ms, want, r.classes_version,
                                   plan.picks, r.record_held, snap.fair, due);
    if (committed.status != TransitionStatus::ok) {
      if (out.jobs.empty()) return committed;  // paused, or stale: the caller refreshes its classes
      break;
    }
    for (auto& job : committed.jobs) out.jobs.push_back(std::move(job));
    for (auto& block : committed.budget_blocked) out.budget_blocked.push_back(std::move(block));
    out.rate_limited = committed.rate_limited;
    out.passed_over = committed.passed_over;
    if (static_cast<int>(out.jobs.size()) >= r.count || !out.rate_limited.empty()) break;
    // Nothing passed over, made available or limited at commit: the decision had no more to offer.
    if (committed.passed_over.empty() && committed.budget_blocked.empty() && committed.promoted == 0) break;
    std::set<std::string> held;
    for (const auto& [cls, why] : committed.passed_over)
      if (why == "held") held.insert(cls);
    std::erase_if(open, [&](const EligibleClass& c) { return held.count(c.id) > 0; });
    if (open.empty()) break;
    const bool only_held = committed.jobs.empty() && committed.budget_blocked.empty() && committed.promoted == 0 &&
                           held.size() == committed.passed_over.size();
    if (only_held) ++rounds;
  }
  return out;
}

GangClaim Claimer::claim_gang(const GangClaimRequest& r, const std::vector<GangClass>& eligible, const RivalScore& rival) {
  // A pick the commit finds moved (the forming gang ended or another began, the head
  // left) is decided again on a fresh read; past a few rounds the next FETCH does.
  constexpr int kRounds = 3;
  std::optional<std::optional<double>> rival_seen;  // asked once across the rounds
  const RivalScore once = [&]() -> std::optional<double> {
    if (!rival_seen) rival_seen = rival ? rival() : std::nullopt;
    return *rival_seen;
  };
  std::optional<std::optional<FairShares>> shares_seen;  // read once across the rounds, as the rival
  const TenantShares shares_once = [&]() -> std::optional<FairShares> {
    if (!shares_seen) shares_seen = r.tenant_shares ? r.tenant_shares() : std::nullopt;
    return *shares_seen;
  };
  for (int round = 0; round < kRounds; ++round) {
    const GangPick pick = eligible.empty() ? GangPick{}
                                           : decide_gang(store_.gang_candidates(r.queue, eligible), eligible, r.member.worker_id, once,
                                                         r.elastic_classes, shares_once, !r.kept_for_preemptor);
    auto out = store_.claim_gang(r.queue, r.member, r.visibility_ms, r.default_visibility_ms, pick);
    if (out.kind != GangClaim::Kind::stale) return out;
  }
  return {};
}

}  // namespace ojs::broker
